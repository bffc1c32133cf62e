package main

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// durationFlag is a duration flag that takes a bare whole number too, as
// seconds, where the flag counts whole seconds (as the beanstalkd protocol
// does): --delay 5 is --delay 5s.
type durationFlag struct{ d time.Duration }

func (f *durationFlag) String() string { return f.d.String() }

// Get implements flag.Getter.
func (f *durationFlag) Get() any { return f.d }

func (f *durationFlag) Set(s string) error {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		f.d = time.Duration(n) * time.Second
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errBadDuration
	}
	f.d = d
	return nil
}

var errBadDuration = errors.New("want a duration such as 30s, 5m or 1h30m (or a whole number of seconds)")

// secondsVar defines a durationFlag of whole seconds.
func secondsVar(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	f := &durationFlag{def}
	fs.Var(f, name, usage)
	return &f.d
}

var flagValueError = regexp.MustCompile(`^invalid value "(.*)" for flag -(\S+): (.*)$`)

// flagError words the flag package's error of a bad value as the other
// usage errors are ("--delay "5x": want …"), and its bare "parse error" of
// a duration flag with what is expected, by example.
func flagError(fs *flag.FlagSet, err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s", name)
	}
	if name, ok := strings.CutPrefix(err.Error(), "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value", name)
	}
	m := flagValueError.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	f := fs.Lookup(m[2])
	if m[3] != "parse error" || f == nil {
		return fmt.Errorf("--%s %q: %s", m[2], m[1], m[3])
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case uint, uint64:
			return fmt.Errorf("--%s %q: want a whole number, 0 or more", m[2], m[1])
		case int, int64:
			return fmt.Errorf("--%s %q: want a whole number", m[2], m[1])
		case float64:
			return fmt.Errorf("--%s %q: want a number", m[2], m[1])
		}
		if _, isDuration := g.Get().(time.Duration); isDuration {
			if _, bare := strconv.ParseFloat(m[1], 64); bare == nil {
				return fmt.Errorf("--%s %s: want a duration with its unit, such as %ss, %sms or %sm", m[2], m[1], m[1], m[1], m[1])
			}
			return fmt.Errorf("--%s %q: want a duration such as 30s, 250ms or 1h30m", m[2], m[1])
		}
	}
	return err
}
