package hourglass_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass"
	"github.com/hourglass-io/hourglass/internal/testkit/redistest"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/ratelimit"
	"github.com/hourglass-io/hourglass/ttlhash"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// roundTrip puts a job through b and reserves it back.
func roundTrip(t *testing.T, b *hourglass.Backend) {
	t.Helper()
	ctx := context.Background()
	q, err := queue.New(b.Queue, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	tube := strings.NewReplacer("/", "-", "#", "-").Replace(t.Name())
	id, err := q.Put(ctx, tube, queue.NewJob{Body: []byte("via " + b.Kind)})
	if err != nil {
		t.Fatal(err)
	}
	j, err := q.Reserve(ctx, queue.ReserveOptions{Tubes: []string{tube}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != id {
		t.Fatalf("reserved %d, want %d", j.ID, id)
	}
	if err := q.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(b.Limits, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		if res, err := l.Allow(ctx, tube, ratelimit.Every(time.Hour)); err != nil || res.Allowed != want {
			t.Fatalf("Allow %d: %+v, %v; want allowed %v", i, res, err, want)
		}
	}
	// And a field through the back end's Hashes.
	hs, err := ttlhash.New(b.Hashes, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := hs.Hash(tube)
	if _, err := h.SetTTL(ctx, "f", []byte(b.Kind), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := h.Get(ctx, "f"); err != nil || !ok || string(v) != b.Kind {
		t.Fatalf("Hashes: Get = %q, %v, %v", v, ok, err)
	}
	if _, err := h.Del(ctx, "f"); err != nil {
		t.Fatal(err)
	}
}

func TestOpen(t *testing.T) {
	srv, err := redistest.SharedStandalone()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := redistest.SharedCluster()
	if err != nil {
		t.Fatal(err)
	}
	sen := redistest.NewSentinel(t)
	dir := t.TempDir()
	cases := []struct {
		url, kind string
	}{
		{"mem://", "memory"},
		{filepath.Join(dir, "plain"), "file"},
		{"file://" + filepath.Join(dir, "url"), "file"},
		{"redis://" + srv.Addr + "/0", "redis"},
		{"redis+cluster://" + strings.Join(cl.Addrs(), ","), "redis"},
		{"redis+sentinel://" + strings.Join(sen.SentinelAddrs(), ",") + "/" + sen.MasterName, "redis"},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			b, err := hourglass.Open(context.Background(), c.url, &hourglass.Options{Prefix: redistest.Prefix(t)})
			if err != nil {
				t.Fatalf("Open(%q): %v", c.url, err)
			}
			defer b.Close()
			if b.Kind != c.kind {
				t.Fatalf("Open(%q).Kind = %q, want %q", c.url, b.Kind, c.kind)
			}
			// The store schemes' registry: each scheme's constructor fills
			// in every primitive's store of a Backend.
			bv := reflect.ValueOf(b).Elem()
			for i := range bv.NumField() {
				f := bv.Type().Field(i)
				if f.IsExported() && f.Type.Kind() == reflect.Interface && f.Name != "Redis" && bv.Field(i).IsNil() {
					t.Errorf("Open(%q) leaves Backend.%s nil", c.url, f.Name)
				}
			}
			roundTrip(t, b)
		})
	}
}

func TestOpenDurable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := hourglass.Open(ctx, dir, &hourglass.Options{Fsync: "everysec"})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := queue.New(b.Queue, nil)
	id, err := q.Put(ctx, "keep", queue.NewJob{Body: []byte("x"), Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	if _, err := hourglass.Open(ctx, dir, nil); err == nil {
		t.Fatal("a second Open of a directory in use succeeded")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = hourglass.Open(ctx, "file://"+dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	q, _ = queue.New(b.Queue, nil)
	defer q.Close()
	st, err := q.StatsJob(ctx, id)
	if err != nil || st.State != queue.Delayed {
		t.Fatalf("after reopening: %+v, %v; want the delayed job", st, err)
	}
}

func TestOpenBadURL(t *testing.T) {
	for _, u := range []string{
		"", "mem://x", "ftp://host/x", "file://host/path", "redis+sentinel://h:1", "redis+sentinel://h:1/",
		"redis+sentinel://h:1/m/x", "redis://[bad",
	} {
		if _, err := hourglass.Open(context.Background(), u, nil); !errors.Is(err, hourglass.ErrUnsupportedURL) {
			t.Errorf("Open(%q) = %v, want ErrUnsupportedURL", u, err)
		}
	}
	if _, err := hourglass.Open(context.Background(), "mem://", &hourglass.Options{Fsync: "sometimes"}); err != nil {
		t.Errorf("Fsync is ignored for mem://, got %v", err)
	}
	if _, err := hourglass.Open(context.Background(), t.TempDir(), &hourglass.Options{Fsync: "sometimes"}); err == nil {
		t.Error("Open with Fsync \"sometimes\" succeeded")
	}
}
