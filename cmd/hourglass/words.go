package main

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The CLI's errors are in its own words: what a command prints when it
// fails names its flags, not the HTTP API's JSON members nor a Go
// struct's fields, carries no Go package's name, and is one line.

// memberFlags are the JSON members of the HTTP API whose flag has another
// name than the member's (a duration member's _ms dropped is the rule:
// ttl_ms is --ttl).
var memberFlags = map[string]string{
	"limits": "limit",
	"cost":   "n",
	"bound":  "N",
}

// flagOfMember is the flag of fs that sets the API's member, as it is
// written on the command line ("--ttl"), or "".
func flagOfMember(fs *flag.FlagSet, member string) string {
	name := strings.TrimSuffix(member, "_ms")
	if n, ok := memberFlags[member]; ok {
		name = n
	}
	name = strings.ReplaceAll(name, "_", "-")
	if fs == nil || fs.Lookup(name) == nil {
		return ""
	}
	return "--" + name
}

// msMember is a JSON member of milliseconds named in a message.
var msMember = regexp.MustCompile(`\b[a-z]+(_[a-z]+)*_ms\b`)

// packagePrefix is the name of one of the module's packages opening a
// message or a part of one ("ratelimit: invalid limit").
var packagePrefix = regexp.MustCompile(`(^|: |\()(queue|lock|ratelimit|schedule|ttlhash|httpapi|beanstalkc|memstore|redisstore|hourglass): `)

// capacityWords is how ratelimit names a limit by its index and its
// burst, which a SPEC calls burst.
var capacityWords = regexp.MustCompile(`limit ([0-9]+)'s capacity ([0-9]+)`)

// ordinal words n: "the limit" for a SPEC's only limit is not known here,
// so "limit 1", "limit 2", … in the SPEC's order.
func ordinal(n int) string { return "limit " + strconv.Itoa(n) + " of the SPEC" }

// cliWords is err's message as the command prints it: the API's member an
// error reply is about named as the command's flag (fs's), other members
// of milliseconds as flags too, package names dropped, on one line; and
// fromEnv, the environment variables that set flags, named when the
// message names their flag.
func cliWords(err error, fs *flag.FlagSet, fromEnv []string) string {
	msg := err.Error()
	var api *apiError
	if errors.As(err, &api) && api.Field != "" {
		if fl := flagOfMember(fs, api.Field); fl != "" {
			m := fl + ": " + api.Message
			for _, sep := range []string{": ", " "} {
				if n := len(api.Field + sep); len(api.Message) >= n && strings.EqualFold(api.Message[:n], api.Field+sep) {
					m = fl + sep + api.Message[n:]
					break
				}
			}
			msg = strings.Replace(msg, api.Message, m, 1)
		}
	}
	msg = msMember.ReplaceAllStringFunc(msg, func(m string) string {
		if fl := flagOfMember(fs, m); fl != "" {
			return fl
		}
		return m
	})
	msg = capacityWords.ReplaceAllStringFunc(msg, func(m string) string {
		sm := capacityWords.FindStringSubmatch(m)
		i, _ := strconv.Atoi(sm[1])
		return fmt.Sprintf("the burst of %s (%s)", ordinal(i+1), sm[2])
	})
	for packagePrefix.MatchString(msg) {
		msg = packagePrefix.ReplaceAllString(msg, "$1")
	}
	msg = strings.ReplaceAll(strings.TrimSpace(msg), "\n", "; ")
	var env []string
	for _, v := range fromEnv {
		name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(v, "HOURGLASS_"), "_", "-"))
		if strings.Contains(msg, "--"+name) {
			env = append(env, fmt.Sprintf("--%s from %s", name, v))
		}
	}
	if len(env) > 0 {
		msg += " (" + strings.Join(env, ", ") + ")"
	}
	return msg
}
