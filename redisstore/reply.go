package redisstore

import "fmt"

// reply reads the reply of one operation, checking its shape: a value of
// the wrong type, or an array too short, is recorded (the first one only)
// and read as the zero value, and err reports it once the reply is read.
// Every reply of the library is read through one, so no reply of an
// unexpected shape can panic the process.
type reply struct {
	op  *op
	err error
}

func replyOf(o *op) *reply { return &reply{op: o} }

func (r *reply) fail(what string, v any) {
	if r.err == nil {
		r.err = fmt.Errorf("redisstore: %s replied %T (%.40v) where %s was expected", r.op.file, v, v, what)
	}
}

// int reads an integer.
func (r *reply) int(v any) int64 {
	n, ok := v.(int64)
	if !ok {
		r.fail("an integer", v)
	}
	return n
}

// str reads a string.
func (r *reply) str(v any) string {
	s, ok := v.(string)
	if !ok {
		r.fail("a string", v)
	}
	return s
}

// optStr reads a string or a nil (a Lua false), reporting which.
func (r *reply) optStr(v any) (string, bool) {
	if v == nil {
		return "", false
	}
	return r.str(v), true
}

// arr reads an array of at least n values.
func (r *reply) arr(v any, n int) []any {
	a, ok := v.([]any)
	if !ok || len(a) < n {
		r.fail(fmt.Sprintf("an array of at least %d", n), v)
		return make([]any, n)
	}
	return a
}

// done returns the first shape error, or nil.
func (r *reply) done() error { return r.err }

// count reads the integer reply v of o, or passes on err, the call's.
func count(o *op, v any, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	r := replyOf(o)
	n := r.int(v)
	return int(n), r.done()
}
