package main

import (
	"errors"
	"flag"
	"strconv"
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
