package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// givenFlags are the names of the flags given on a command line, in
// their order.
type givenFlags []string

// givenOf returns the flags given to fs, once it has parsed them.
func givenOf(fs *flag.FlagSet) givenFlags {
	var g givenFlags
	fs.Visit(func(fl *flag.Flag) { g = append(g, fl.Name) })
	return g
}

// has reports whether flag name was given.
func (g givenFlags) has(name string) bool { return slices.Contains(g, name) }

// parseArgs is the one flag parser of every command: flags may come
// before, between and after the positional arguments, which it returns in
// order. "--" ends the flags: every word after it is an argument. A word
// that reads as a negative number ("-3") is an argument, not a flag. A
// flag is -name or --name; its value follows it as the next word, or
// after "=" (a bool flag takes its value only after "=": --json,
// --json=false). -h and --help (unless the command defines them) are
// flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' || isNumber(a) {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimPrefix(a[1:], "-")
		value, hasValue := "", false
		if n, v, ok := strings.Cut(name, "="); ok {
			name, value, hasValue = n, v, true
		}
		if name == "" || name[0] == '-' {
			return nil, fmt.Errorf("bad flag %q: a flag is --name or --name=value", a)
		}
		f := fs.Lookup(name)
		if f == nil {
			if name == "h" || name == "help" {
				return nil, flag.ErrHelp
			}
			return nil, fmt.Errorf("unknown flag --%s", name)
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && !hasValue {
			value, hasValue = "true", true
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, fmt.Errorf("--%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return nil, valueError(f, name, value, err)
		}
	}
	return pos, nil
}

// isNumber reports whether s reads as a number: "-3", "-0.5".
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// valueError words the refusal of value for the flag f (given as --name)
// as the other usage errors are ("--delay "5x": want …"), saying what is
// expected by example where the value's own error does not.
func valueError(f *flag.Flag, name, value string, err error) error {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return fmt.Errorf("--%s %q: want true or false", name, value)
	}
	if g, ok := f.Value.(flag.Getter); ok && isParseError(err) {
		switch g.Get().(type) {
		case uint, uint64:
			return fmt.Errorf("--%s %q: want a whole number, 0 or more", name, value)
		case int, int64:
			return fmt.Errorf("--%s %q: want a whole number", name, value)
		case float64:
			return fmt.Errorf("--%s %q: want a number", name, value)
		}
		if _, isDuration := g.Get().(interface{ Minutes() float64 }); isDuration {
			if _, bare := strconv.ParseFloat(value, 64); bare == nil {
				return fmt.Errorf("--%s %s: want a duration with its unit, such as %ss, %sms or %sm", name, value, value, value, value)
			}
			return fmt.Errorf("--%s %q: want a duration such as 30s, 250ms or 1h30m", name, value)
		}
	}
	return fmt.Errorf("--%s %q: %v", name, value, err)
}

// isParseError reports whether err is the flag package's bare refusal of a
// value of one of its own types ("parse error", "value out of range"),
// which says nothing of what is wanted.
func isParseError(err error) bool {
	return errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange) ||
		err.Error() == "parse error" || err.Error() == "value out of range"
}
