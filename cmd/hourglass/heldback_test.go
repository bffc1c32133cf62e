package main

import (
	"regexp"
	"testing"

	"github.com/hourglass-io/hourglass/server/httpapi"
)

// A reserve that gets no job while ready jobs wait says which limit held
// them back and when one frees, over the beanstalkd protocol and over
// HTTP (--keep); exit status 3 as for any timeout.
func TestReserveSaysWhatHeldItBack(t *testing.T) {
	p := startServe(t, nil, "--store", "mem://", "--tube-limit", "life=cap=2", "--tube-limit", "sms=1/1m")
	env := append(p.env, "HOURGLASS_HTTP=http://"+p.httpAddr)
	for range 10 {
		ok(t, env, "put", "--tube", "life", "--ttr", "1m", "job")
	}
	ok(t, env, "reserve", "--keep", "--tube", "life", "--timeout", "0")
	ok(t, env, "reserve", "--keep", "--tube", "life", "--timeout", "0")
	capWords := regexp.MustCompile(`^hourglass reserve: no job in tube life within 0s: 8 ready jobs held back by the cap of tube life \(2 of 2 reserved\): one frees when a reservation is deleted, released or buried, or by its TTR in (59|1m0)[.0-9]*s\n$`)
	for _, keep := range []string{"--keep=false", "--keep"} {
		r := run(t, env, "", "reserve", keep, "--tube", "life", "--timeout", "0")
		if r.code != exitMiss || !capWords.MatchString(r.stderr) {
			t.Errorf("reserve %s at the cap: %d %q", keep, r.code, r.stderr)
		}
	}
	ok(t, env, "put", "--tube", "sms", "one")
	ok(t, env, "put", "--tube", "sms", "two")
	ok(t, env, "reserve", "--keep", "--tube", "sms", "--timeout", "0")
	for _, keep := range []string{"--keep=false", "--keep"} {
		r := run(t, env, "", "reserve", keep, "--tube", "sms", "--timeout", "0")
		if want := "hourglass reserve: no job in tube sms within 0s: 1 ready job held back by the rate of tube sms (1/1m0s, burst 1): the next reserve passes in 1m0s\n"; r.code != exitMiss || r.stderr != want {
			t.Errorf("reserve %s held by the rate: %d %q, want %q", keep, r.code, r.stderr, want)
		}
	}
	// Nothing ready: nothing more to say.
	if r := run(t, env, "", "reserve", "--tube", "empty", "--timeout", "0"); r.code != exitMiss || r.stderr != "hourglass reserve: no job in tube empty within 0s\n" {
		t.Errorf("reserve of an empty tube: %d %q", r.code, r.stderr)
	}
}

func TestParseHeldBack(t *testing.T) {
	got, err := parseHeldBack(`"mail;x";by=cap;ready=8;reserved=2;cap=2;frees-in-ms=45000, "sms";by=rate;ready=1;rate="1/1m0s, burst 1";frees-in-ms=60000`)
	want := []httpapi.HeldBack{{Tube: "mail;x", By: "cap", Ready: 8, Reserved: 2, Cap: 2, FreesInMS: 45000}, {Tube: "sms", By: "rate", Ready: 1, Rate: "1/1m0s, burst 1", FreesInMS: 60000}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("parseHeldBack: %+v, %v; want %+v", got, err, want)
	}
	if _, err := parseHeldBack(`mail;by=cap`); err == nil {
		t.Error("a name not quoted was read")
	}
}
