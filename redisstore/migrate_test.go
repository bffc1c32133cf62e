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

	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/redisstore"
	"github.com/redis/go-redis/v9"
)

// layoutFixture is testdata/layout<n>.json: every key of a store that the
// release before layout n+1 wrote at a fixed clock (layout 1: b8959de;
// layout 2: c03b85c), and what that release answered about it.
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

// layout is the layout version the fixture's store holds.
func (f layoutFixture) layout() string {
	for _, k := range f.Keys {
		if k.Key == "hg:layout" {
			v, _ := base64.StdEncoding.DecodeString(k.String)
			return string(v)
		}
	}
	return ""
}

// loadLayout writes the keys of fixture testdata/<name>.json under prefix
// and returns it.
func loadLayout(t *testing.T, c redis.UniversalClient, prefix, name string) layoutFixture {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile("testdata/" + name + ".json")
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
	testMigrate(t, "layout1", func(t *testing.T, m redisstore.Migration) {
		if m.From != "1" || m.Deleted != 7 || m.Converted != 12 {
			t.Fatalf("Migrate: %+v, want from 1, 7 reservation indexes deleted, 12 jobs converted", m)
		}
	})
}

// The same for a store written by layout 2, whose jobs (groups' among
// them) are rewritten into layout 3's fields.
func TestMigrateLayout2(t *testing.T) {
	testMigrate(t, "layout2", func(t *testing.T, m redisstore.Migration) {
		if m.From != "2" || m.Deleted != 0 || m.Converted != 16 {
			t.Fatalf("Migrate: %+v, want from 2, 16 jobs converted", m)
		}
	})
}

func testMigrate(t *testing.T, fixture string, checkMigration func(*testing.T, redisstore.Migration)) {
	ctx := context.Background()
	c := redistest.StandaloneClient(t)
	prefix := redistest.Prefix(t)
	f := loadLayout(t, c, prefix, fixture)
	now := time.UnixMilli(f.ClockUnixMs)
	opts := &redisstore.Options{Prefix: prefix, Clock: func() time.Time { return now }}

	_, err := redisstore.New(ctx, c, opts)
	if !errors.Is(err, redisstore.ErrOldLayout) || !strings.Contains(err.Error(), "hourglass migrate") {
		t.Fatalf("New on %s: %v, want ErrOldLayout naming hourglass migrate", fixture, err)
	}
	// A server whose lease has not lapsed still uses the store: refused,
	// nothing changed.
	if err := c.ZAdd(ctx, prefix+"sessions", redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: "alive"}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := redisstore.Migrate(ctx, c, opts); !errors.Is(err, redisstore.ErrInUse) || !strings.Contains(err.Error(), "alive") {
		t.Fatalf("Migrate with a live session: %v, want ErrInUse naming it", err)
	}
	if v, _ := c.Get(ctx, prefix+"layout").Result(); v != f.layout() {
		t.Fatalf("layout after a refused Migrate: %q, want %q", v, f.layout())
	}
	if err := c.ZRem(ctx, prefix+"sessions", "alive").Err(); err != nil {
		t.Fatal(err)
	}
	m, err := redisstore.Migrate(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.To != redisstore.LayoutVersion {
		t.Fatalf("Migrate: %+v, want to %s", m, redisstore.LayoutVersion)
	}
	checkMigration(t, m)
	if again, err := redisstore.Migrate(ctx, c, opts); err != nil || again.From != redisstore.LayoutVersion || again.Deleted != 0 || again.Converted != 0 {
		t.Fatalf("Migrate again: %+v, %v; want nothing to do", again, err)
	}
	// A conversion cut short is run again over jobs already converted:
	// they are left as they are.
	if err := c.Set(ctx, prefix+"layout", "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if again, err := redisstore.Migrate(ctx, c, opts); err != nil || again.From != "2" || again.Converted != 0 {
		t.Fatalf("Migrate over converted jobs: %+v, %v; want none converted again", again, err)
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
