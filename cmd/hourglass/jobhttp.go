package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// jobHTTP are the flags with which peek and stats --job read a job over
// the HTTP API of an hourglass server instead of the beanstalkd protocol:
// its view there carries what beanstalkd's stats-job has no field for, the
// job's history (attempts, last error, when each transition last
// happened).
type jobHTTP struct {
	url   string
	token string
}

func (f *jobHTTP) define(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "http", "", "read the job over the HTTP API at `URL` (an hourglass server) and show its history too: attempts, last error, when each transition last happened")
	fs.StringVar(&f.token, "auth-token", "", "bearer `token` of the HTTP API")
}

// client returns the HTTP client of the flags.
func (f *jobHTTP) client() *httpClient {
	return (&httpFlags{url: f.url, token: f.token}).client()
}

// notFound turns the API's not_found reply into the miss the beanstalkd
// path reports, with its message.
func notFound(err error, format string, args ...any) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == httpapi.CodeNotFound {
		return missf(format, args...)
	}
	return err
}

// peekHTTP is peek over the HTTP API: the job by ID or, when state is set,
// the next job of tube in that state, with its state and history.
func (c *cli) peekHTTP(ctx context.Context, hf jobHTTP, asJSON bool, id uint64, tube, state string, raw bool) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	hc := hf.client()
	if state != "" {
		_, body, err := hc.call(ctx, "GET", "/v1/tubes/"+url.PathEscape(tube)+"/peek/"+state, nil)
		if err != nil {
			return notFound(err, "no %s job in tube %s", state, tube)
		}
		var j struct {
			ID uint64 `json:"id"`
		}
		if err := json.Unmarshal(body, &j); err != nil {
			return fmt.Errorf("peek: the server's reply: %w", err)
		}
		id = j.ID
	}
	_, body, err := hc.call(ctx, "GET", fmt.Sprintf("/v1/jobs/%d", id), nil)
	if err != nil {
		return notFound(err, "job %d not found", id)
	}
	if raw {
		var j struct {
			BodyBase64 string `json:"body_base64"`
		}
		if err := json.Unmarshal(body, &j); err != nil {
			return fmt.Errorf("peek: the server's reply: %w", err)
		}
		b, err := base64.StdEncoding.DecodeString(j.BodyBase64)
		if err != nil {
			return fmt.Errorf("peek: the server's reply: %w", err)
		}
		_, err = c.stdout.Write(b)
		return err
	}
	if asJSON {
		return c.show(httpFlags{json: true}, body)
	}
	return c.showJobText(body)
}

// statsJobHTTP is stats --job over the HTTP API.
func (c *cli) statsJobHTTP(ctx context.Context, hf jobHTTP, asJSON bool, id uint64) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	_, body, err := hf.client().call(ctx, "GET", fmt.Sprintf("/v1/jobs/%d/stats", id), nil)
	if err != nil {
		return notFound(err, "job %d not found", id)
	}
	if asJSON {
		return c.show(httpFlags{json: true}, body)
	}
	return c.showJobText(body)
}

// showJobText prints a job's JSON view as "key: value" lines in the
// server's order: times that never happened as "never", and the body once,
// as text when it is text (else base64).
func (c *cli) showJobText(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("the server's reply is not a JSON object: %.40q", body)
	}
	var fields []field
	text := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return fmt.Errorf("the server's reply: %w", err)
		}
		key, _ := k.(string)
		if key == "errors" {
			var errs []httpapi.AttemptError
			if err := dec.Decode(&errs); err != nil {
				return fmt.Errorf("the server's reply: %w", err)
			}
			fields = append(fields, errorFields(errs)...)
			continue
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("the server's reply: %w", err)
		}
		if v == nil {
			v = "never"
		}
		text = text || key == "body"
		fields = append(fields, field{key, v})
	}
	out := fields[:0]
	for _, f := range fields {
		if f.key != "body_base64" || !text {
			out = append(out, f)
		}
	}
	return writeKV(c.stdout, durationsOf(out))
}

// errorFields are a job's error history as "error" lines, oldest first:
// the time, the attempt and the reason (a reason of several lines is a
// block under its line, as writeKV shows it).
func errorFields(errs []httpapi.AttemptError) []field {
	out := make([]field, len(errs))
	for i, e := range errs {
		reason := e.Reason
		if strings.Contains(reason, "\n") {
			reason = "|\n  " + strings.ReplaceAll(strings.TrimRight(reason, "\n"), "\n", "\n  ")
		}
		out[i] = field{"error", laidOut(fmt.Sprintf("%s attempt %d: %s", time.Time(e.At).UTC().Format(httpapi.TimestampFormat), e.Attempt, reason))}
	}
	return out
}
