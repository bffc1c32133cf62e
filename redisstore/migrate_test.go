package redisstore_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// layoutFixture is testdata/layout1.json: every key of a store that the
// release before layout 2 (b8959de) wrote at a fixed clock, and what that
// release answered about it.
type layoutFixture struct {
	ClockUnixMs int64 `json:"clock_unix_ms"`
	Keys        []struct {
		Key    string            `json:"key"`
		Type   string            `json:"type"`
		PTTL   int64             `json:"pttl_ms"`
		String string            `json:"string"`
		Hash   map[string]string `json:"hash"`
		ZSet   []struct {
			Member string `json:"m"`
			Score  string `json:"s"`
		} `json:"zset"`
	} `json:"keys"`
	Jobs         []queue.JobStats               `json:"jobs"`
	Tubes        []queue.TubeStats              `json:"tubes"`
	Stats        queue.Stats                    `json:"stats"`
	Reservations map[string][]queue.Reservation `json:"reservations"`
}

// loadLayout1 writes the fixture's keys under prefix and returns it.
func loadLayout1(t *testing.T, c redis.UniversalClient, prefix string) layoutFixture {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile("testdata/layout1.json")
	if err != nil {
		t.Fatal(err)
	}
	var f layoutFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	dec := func(s string) string {
		v, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	for _, k := range f.Keys {
		key := prefix + strings.TrimPrefix(k.Key, "hg:")
		switch k.Type {
		case "string":
			err = c.Set(ctx, key, dec(k.String), 0).Err()
		case "hash":
			args := []any{}
			for field, v := range k.Hash {
				args = append(args, field, dec(v))
			}
			err = c.HSet(ctx, key, args...).Err()
		case "zset":
			args := []any{"ZADD", key}
			for _, z := range k.ZSet {
				args = append(args, z.Score, z.Member)
			}
			err = c.Do(ctx, args...).Err()
		default:
			t.Fatalf("fixture key %s of type %s", k.Key, k.Type)
		}
		if err == nil && k.PTTL > 0 {
			err = c.PExpire(ctx, key, time.Duration(k.PTTL)*time.Millisecond).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// A store written by layout 1 is refused with an error that names the
// command converting it; Migrate converts it, and every job keeps its
// state, history and counters, the ledger of reservations is the same, and
// the jobs go on through their lifecycle.
func TestMigrateLayout1(t *testing.T) {
	ctx := context.Background()
	c := redistest.StandaloneClient(t)
	prefix := redistest.Prefix(t)
	f := loadLayout1(t, c, prefix)
	now := time.UnixMilli(f.ClockUnixMs)
	opts := &redisstore.Options{Prefix: prefix, Clock: func() time.Time { return now }}

	_, err := redisstore.New(ctx, c, opts)
	if !errors.Is(err, redisstore.ErrOldLayout) || !strings.Contains(err.Error(), "hourglass migrate") {
		t.Fatalf("New on layout 1: %v, want ErrOldLayout naming hourglass migrate", err)
	}
	m, err := redisstore.Migrate(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.From != "1" || m.To != redisstore.LayoutVersion || m.Deleted != 7 {
		t.Fatalf("Migrate: %+v, want from 1 to %s, 7 reservation indexes deleted", m, redisstore.LayoutVersion)
	}
	if again, err := redisstore.Migrate(ctx, c, opts); err != nil || again.From != redisstore.LayoutVersion || again.Deleted != 0 {
		t.Fatalf("Migrate again: %+v, %v; want nothing to do", again, err)
	}
	s, err := redisstore.New(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	for _, want := range f.Jobs {
		got, err := s.StatsJob(ctx, want.ID)
		if err != nil {
			t.Fatalf("job %d: %v", want.ID, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("job %d:\n got %+v\nwant %+v", want.ID, got, want)
		}
	}
	for _, want := range f.Tubes {
		got, err := s.StatsTube(ctx, want.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("tube %s:\n got %+v\nwant %+v", want.Name, got, want)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st != f.Stats {
		t.Errorf("stats: got %+v, want %+v", st, f.Stats)
	}
	// The ledger: the fixture's reservations, each with the time it had
	// left. An owner of a session is asked only in the tags it reserved in
	// through this process, so sess/c1 reserves one more job first.
	extra, err := s.Reserve(ctx, queue.ReserveRequest{Owner: "sess/c1", Tubes: []string{"emails"}, Max: 1})
	if err != nil || len(extra.Jobs) != 1 {
		t.Fatalf("reserve by sess/c1: %+v, %v", extra, err)
	}
	for owner, want := range f.Reservations {
		got, err := s.Reservations(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		if owner == "sess/c1" {
			want = append(want, queue.Reservation{ID: extra.Jobs[0].ID, Left: extra.Jobs[0].TTR})
		}
		sort.Slice(got, func(i, j int) bool { return got[i].ID < got[j].ID })
		sort.Slice(want, func(i, j int) bool { return want[i].ID < want[j].ID })
		if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("reservations of %s: got %+v, want %+v", owner, got, want)
		}
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}

	// The jobs go on: the held ones are deleted by their owners, the buried
	// one kicked, and a new job's ID is above every old one.
	var maxID queue.ID
	f.Reservations["sess/c1"] = append(f.Reservations["sess/c1"], queue.Reservation{ID: extra.Jobs[0].ID})
	held := append(f.Jobs, queue.JobStats{ID: extra.Jobs[0].ID, State: queue.Reserved})
	for _, j := range held {
		maxID = max(maxID, j.ID)
		if j.State == queue.Reserved {
			owner := ""
			for o, rs := range f.Reservations {
				for _, r := range rs {
					if r.ID == j.ID {
						owner = o
					}
				}
			}
			errs, err := s.Delete(ctx, owner, []queue.ID{j.ID})
			if err != nil || errs[0] != nil {
				t.Fatalf("delete %d by %s: %v %v", j.ID, owner, err, errs)
			}
		}
	}
	if n, err := s.Kick(ctx, "emails", 10); err != nil || n != 1 {
		t.Fatalf("kick: %d, %v; want 1", n, err)
	}
	res, err := s.Put(ctx, "emails", []queue.NewJob{{Body: []byte("after"), TTR: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].ID <= maxID {
		t.Fatalf("new job %d, want above every old one (%d)", res[0].ID, maxID)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
}
