package beanstalk_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	gobeanstalk "github.com/beanstalkd/go-beanstalk"
)

// TestClientLibrary drives the server with a real beanstalkd client.
func TestClientLibrary(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, addr := startServer(t, b.Open(t), nil)
		c, err := gobeanstalk.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}

		jobs := gobeanstalk.NewTube(c, "jobs")
		id, err := jobs.Put([]byte("hello"), 10, 0, time.Minute)
		must(err)
		late, err := jobs.Put([]byte("later"), 10, time.Hour, time.Minute)
		must(err)

		ts := gobeanstalk.NewTubeSet(c, "jobs")
		gotID, body, err := ts.Reserve(5 * time.Second)
		must(err)
		if gotID != id || string(body) != "hello" {
			t.Fatalf("Reserve: %d %q, want %d hello", gotID, body, id)
		}
		st, err := c.StatsJob(id)
		must(err)
		if st["state"] != "reserved" || st["tube"] != "jobs" || st["ttr"] != "60" {
			t.Errorf("StatsJob: %v", st)
		}
		must(c.Touch(id))
		must(c.Release(id, 5, 0))
		_, body, err = jobs.PeekReady()
		must(err)
		if string(body) != "hello" {
			t.Errorf("PeekReady: %q", body)
		}
		gotID, _, err = ts.Reserve(5 * time.Second)
		must(err)
		must(c.Bury(gotID, 1))
		pid, _, err := jobs.PeekBuried()
		must(err)
		if pid != id {
			t.Errorf("PeekBuried: %d, want %d", pid, id)
		}
		n, err := jobs.Kick(10)
		must(err)
		if n != 1 {
			t.Errorf("Kick: %d, want 1 (the buried job, not the delayed one)", n)
		}
		gotID, _, err = ts.Reserve(5 * time.Second)
		must(err)
		must(c.Delete(gotID))

		if _, _, err := ts.Reserve(0); !errors.Is(err, gobeanstalk.ErrTimeout) {
			t.Errorf("Reserve with nothing ready: %v, want ErrTimeout", err)
		}
		if err := c.Delete(id); !errors.Is(err, gobeanstalk.ErrNotFound) {
			t.Errorf("Delete of a deleted job: %v, want ErrNotFound", err)
		}
		must(c.KickJob(late))
		body, err = c.ReserveJob(late)
		must(err)
		if string(body) != "later" {
			t.Errorf("ReserveJob: %q", body)
		}
		must(c.Delete(late))

		tubes, err := c.ListTubes()
		must(err)
		if !slices.Equal(tubes, []string{"default", "jobs"}) {
			t.Errorf("ListTubes: %v", tubes)
		}
		must(jobs.Pause(time.Second))
		ps, err := jobs.Stats()
		must(err)
		if ps["pause"] != "1" || ps["cmd-pause-tube"] != "1" {
			t.Errorf("tube stats after a pause: %v", ps)
		}
		s, err := c.Stats()
		must(err)
		if s["cmd-put"] != "2" || s["cmd-delete"] != "3" || s["version"] != `"1.12"` || s["current-connections"] != "1" {
			t.Errorf("Stats: %v", s)
		}
	})
}
