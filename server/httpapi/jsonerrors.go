package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
)

// jsonError turns an error of decoding a request's JSON body into v into
// a reply in the request's own terms: the field by its JSON name and what
// it takes, never a Go type.
func jsonError(err error, v any) error {
	var (
		te *json.UnmarshalTypeError
		se *json.SyntaxError
	)
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return badRequest("the JSON body must be %s, not %s", wants(te.Type), kindOf(te.Value))
		}
		return badField(field, "must be %s, not %s", wants(te.Type), kindOf(te.Value))
	case errors.As(err, &se):
		return badRequest("the JSON body is not valid JSON: %s (at byte %d)", se.Error(), se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("the JSON body ends before its value does")
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		var field string
		if json.Unmarshal([]byte(name), &field) != nil {
			field = strings.Trim(name, `"`)
		}
		// The fields are listed when the request has no nested object,
		// where the unknown one could be.
		if fields := jsonFields(reflect.TypeOf(v)); len(fields) > 0 && !nested(reflect.TypeOf(v)) {
			return badField(field, "is not a field of this request; the fields are %s", strings.Join(fields, ", "))
		}
		return badField(field, "is not a field of this request")
	}
	return badRequest("the JSON body: %s", strings.TrimPrefix(msg, "json: "))
}

// kindOf words the JSON value encoding/json describes ("number -1",
// "string", "array") for a person.
func kindOf(value string) string {
	switch {
	case strings.HasPrefix(value, "number "):
		return value[len("number "):]
	case value == "number":
		return "a number"
	case value == "string":
		return "a string"
	case value == "bool":
		return "true or false"
	case value == "array":
		return "an array"
	case value == "object":
		return "an object"
	}
	return value
}

// wants words what a value of Go type t takes in JSON.
func wants(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint, reflect.Uintptr:
		max := uint64(math.MaxUint64) >> (64 - t.Bits())
		return sprintf("a whole number from 0 to %d", max)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		return sprintf("a whole number from %d to %d", int64(-1)<<(t.Bits()-1), int64(math.MaxInt64)>>(64-t.Bits()))
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return wants(t.Elem()) + " in an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// jsonFields lists the JSON names of a struct type's fields.
func jsonFields(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && f.Tag.Get("json") == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// scheduleGoNames are the names package schedule's errors give the fields
// of a Schedule, with the JSON names of a set's body.
var scheduleGoNames = []struct{ goName, field string }{
	{"Spec", "spec"}, {"Zone", "zone"}, {"Start", "start"}, {"End", "end"},
	{"Job.Tube", "job.tube"}, {"Job.TTR", "job.ttr_ms"}, {"Job.Body", "job.body"},
	{"Misfire", "misfire"}, {"Grace", "grace_ms"},
}

// scheduleFieldError words an error of ScheduleRequest.Schedule for the
// sender of a set: the field by its JSON name, in the reply's "field"
// too. The request's own fields are named so already.
func scheduleFieldError(err error) error {
	ae := asAPIError(err)
	if ae.status != http.StatusBadRequest {
		return err
	}
	msg := ae.message
	field := fieldOf(err)
	rest, named := strings.CutPrefix(msg, "invalid option: ") // the request's own fields, named already
	for _, n := range scheduleGoNames {
		for _, sep := range []string{": ", " "} {
			at := strings.Index(msg, n.goName+sep)
			if at < 0 || (at > 0 && msg[at-1] != ' ') {
				continue
			}
			msg = msg[:at] + n.field + msg[at+len(n.goName):]
			field = n.field
			break
		}
	}
	if named {
		msg = strings.TrimPrefix(msg, "invalid option: ")
	}
	if field == "" && named {
		// The request's own fields: "misfire.policy …".
		if name, _, ok := strings.Cut(rest, " "); ok && strings.ToLower(name) == name {
			field = strings.TrimSuffix(name, ":")
		}
	}
	ae.message = msg
	if field == "" {
		return ae
	}
	return fieldError{ae, field}
}

// nested reports whether a struct type has a field that is itself an
// object (a struct or a pointer to one, or a slice of them).
func nested(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		ft := t.Field(i).Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(httpapiTimestamp) {
			return true
		}
	}
	return false
}

var httpapiTimestamp Timestamp

// limitGoNames are the names package ratelimit's errors give a Limit's
// fields, with the JSON names of a limit in a request.
var limitGoNames = []struct{ goName, field string }{
	{"Events", "events"}, {"Per", "per"}, {"Burst", "burst"}, {"Quota", "quota"},
}

// limitFieldError words the error of the i-th limit of a request for its
// sender: "limits[0].events is 0, want at least 1".
func limitFieldError(i int, err error) error {
	msg := strings.TrimPrefix(userWords(err.Error()), "invalid limit: ")
	field := sprintf("limits[%d]", i)
	for _, n := range limitGoNames {
		if rest, ok := strings.CutPrefix(msg, n.goName+" "); ok {
			field += "." + n.field
			msg = rest
			if !strings.HasPrefix(msg, "is ") && (len(msg) > 0 && (msg[0] >= '0' && msg[0] <= '9' || msg[0] == '-')) {
				msg = "is " + msg
			}
			break
		}
	}
	return fieldError{apiError{http.StatusBadRequest, CodeBadLimit, field + " " + msg, 0}, field}
}
