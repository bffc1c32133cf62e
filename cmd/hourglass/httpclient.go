package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// defaultHTTP is the HTTP API's address when --http and HOURGLASS_HTTP are
// not given.
const defaultHTTP = "http://127.0.0.1:7480"

// httpFlags are the flags of every command that talks to the HTTP API:
// the subcommands of the primitives reached over HTTP share them, and
// httpClient, so that each such command is its request and its output.
type httpFlags struct {
	url   string
	token string
	json  bool
}

func (f *httpFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "http", defaultHTTP, "`URL` of the server's HTTP API")
	fs.StringVar(&f.token, "auth-token", "", "bearer `token` of the server")
	fs.BoolVar(&f.json, "json", false, "print the server's JSON reply instead of text")
}

// client returns the client of the flags' server.
func (f *httpFlags) client() *httpClient {
	return &httpClient{base: strings.TrimRight(f.url, "/"), token: f.token, hc: &http.Client{}}
}

// httpClient calls the HTTP API.
type httpClient struct {
	base  string
	token string
	hc    *http.Client
	// header is sent with every call (a lock's owner token).
	header map[string]string
}

// apiError is an error reply of the API: "job 42 not found (not_found)".
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field is the request's member the error is about, when it is about
	// one; cliWords names the command's flag instead.
	Field string `json:"field"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (%s)", e.Message, e.Code) }

// call sends in (JSON, when not nil) to path with method, and returns the
// reply's body: JSON, or nothing for 204. An error reply is an *apiError.
func (c *httpClient) call(ctx context.Context, method, path string, in any) (status int, body []byte, err error) {
	status, body, _, err = c.callHeader(ctx, method, path, in)
	return status, body, err
}

// callHeader is call that returns the reply's header too.
func (c *httpClient) callHeader(ctx context.Context, method, path string, in any) (status int, body []byte, header http.Header, err error) {
	var rd io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("cannot reach %s: %w", c.base, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	header = resp.Header
	body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the reply of %s: %w", c.base, err)
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error apiError `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error.Code == "" {
			return resp.StatusCode, body, header, fmt.Errorf("%s %s: %s", method, path, resp.Status)
		}
		e.Error.Status = resp.StatusCode
		return resp.StatusCode, body, header, &e.Error
	}
	return resp.StatusCode, body, header, nil
}

// show prints a JSON reply: as it is with --json, else as aligned
// "key: value" lines (nested values as JSON).
func (c *cli) show(f httpFlags, body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if f.json {
		_, err := c.stdout.Write(append(bytes.TrimRight(body, "\n"), '\n'))
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var o orderedObject
	if err := dec.Decode(&o); err != nil {
		_, err := c.stdout.Write(body)
		return err
	}
	return writeKV(c.stdout, durationsOf(o))
}

// durationsOf shows the members of milliseconds of a reply as durations
// with their unit, as every text output does: ttr_ms 60000 is "ttr: 1m0s".
func durationsOf(o orderedObject) orderedObject {
	out := make(orderedObject, len(o))
	for i, f := range o {
		out[i] = f
		name, ok := strings.CutSuffix(f.key, "_ms")
		if !ok {
			continue
		}
		var s string
		switch v := f.value.(type) {
		case string:
			s = v
		case json.Number:
			s = v.String()
		}
		if s != "" {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
				out[i] = field{name, (time.Duration(n) * time.Millisecond).String()}
			}
		}
	}
	return out
}

// orderedObject decodes a JSON object keeping its keys in order; nested
// values stay as compact JSON, strings as text.
type orderedObject []field

func (o *orderedObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not an object")
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		var v any = string(raw)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			v = s
		}
		*o = append(*o, field{k.(string), v})
	}
	return nil
}

var apiCommand = &command{
	name:    "api",
	forms:   []string{"GET /v1/stats"},
	args:    "[flags] METHOD PATH [JSON]",
	summary: "call the HTTP API: hourglass api GET /v1/stats",
	help: `Sends one request to the HTTP API (--http, or HOURGLASS_HTTP; default
` + defaultHTTP + `) with the bearer token of --auth-token (or
HOURGLASS_AUTH_TOKEN), and prints the reply as "key: value" lines, or as the
server's JSON with --json. The routes are in the server's
/v1/openapi.json. An error reply is printed as "message (code)" with exit
status 2 for a 400 or 413, 3 for a 404 and 1 for the others.

Examples:

  hourglass api GET /v1/stats
  hourglass api POST /v1/tubes/emails/jobs '{"body":"hello","delay_ms":5000}'
  hourglass api --json POST /v1/reserve '{"tubes":["emails"],"timeout_ms":10000}'
  hourglass api POST /v1/tubes/emails/kick '{"bound":100}'
`,
	flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
		var hf httpFlags
		hf.define(fs)
		return func(ctx context.Context, c *cli, args []string) error {
			if len(args) < 2 || len(args) > 3 {
				return usagef("api takes METHOD PATH [JSON], got %q", args)
			}
			method, path := strings.ToUpper(args[0]), args[1]
			if !strings.HasPrefix(path, "/") {
				return usagef("api: PATH %q must start with /", path)
			}
			var in any
			if len(args) == 3 {
				if !json.Valid([]byte(args[2])) {
					return usagef("api: the body %q is not JSON", args[2])
				}
				in = json.RawMessage(args[2])
			}
			// A long poll may wait as long as the server allows.
			ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			_, body, err := hf.client().call(ctx, method, path, in)
			if err != nil {
				return err
			}
			return c.show(hf, body)
		}
	},
}
