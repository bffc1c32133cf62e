package beanstalkc

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Stat is one "key: value" line of a stats document.
type Stat struct {
	Key   string
	Value string // unquoted: the YAML scalar's value
}

// Stats is a stats document: its lines, in the server's order.
type Stats []Stat

// Get returns the value of key and whether the document has it.
func (s Stats) Get(key string) (string, bool) {
	for _, st := range s {
		if st.Key == key {
			return st.Value, true
		}
	}
	return "", false
}

// Int returns the value of key as an integer, and false when the document
// does not have it or it is not an integer.
func (s Stats) Int(key string) (int64, bool) {
	v, ok := s.Get(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// ParseStats reads a stats document as the stats commands send it: "---",
// then one "key: value" line per statistic, the value a plain or quoted
// YAML scalar.
func ParseStats(b []byte) (Stats, error) {
	lines, err := yamlLines(b)
	if err != nil {
		return nil, err
	}
	s := make(Stats, 0, len(lines))
	for _, l := range lines {
		k, v, ok := strings.Cut(l, ":")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("%w: stats line %q is not \"key: value\"", ErrUnexpectedReply, l)
		}
		s = append(s, Stat{Key: k, Value: unquote(strings.TrimSpace(v))})
	}
	return s, nil
}

// parseList reads a YAML list of names, as list-tubes sends it.
func parseList(b []byte) ([]string, error) {
	lines, err := yamlLines(b)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(lines))
	for _, l := range lines {
		name, ok := strings.CutPrefix(l, "- ")
		if !ok {
			return nil, fmt.Errorf("%w: list line %q is not \"- name\"", ErrUnexpectedReply, l)
		}
		names = append(names, unquote(strings.TrimSpace(name)))
	}
	return names, nil
}

// yamlLines returns the non-empty lines of a document after its "---".
func yamlLines(b []byte) ([]string, error) {
	s := string(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")))
	rest, ok := strings.CutPrefix(s, "---")
	if !ok {
		return nil, fmt.Errorf("%w: YAML document does not start with ---", ErrUnexpectedReply)
	}
	var lines []string
	for l := range strings.SplitSeq(rest, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// unquote returns the value of a YAML scalar: a double-quoted one with its
// escapes read, a single-quoted one with each doubled quote read as one,
// a plain one as it is.
func unquote(v string) string {
	switch {
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return v[1 : len(v)-1]
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	return v
}
