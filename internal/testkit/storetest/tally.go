package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hourglass-io/hourglass/internal/tally"
)

// NewTallyStore returns a fresh, empty tally store and a function that
// closes it (the suite calls it at most once; the constructor registers
// any other cleanup with t).
type NewTallyStore func(t *testing.T) (s tally.Store, close func())

// Tally runs the conformance suite of the tally.Store contract, the
// worked example of CONTRIBUTING.md, against stores made by newStore, one
// fresh store per subtest.
func Tally(t *testing.T, newStore NewTallyStore) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s tally.Store, close func())
	}{
		{"AddGet", testTallyAddGet},
		{"BadInput", testTallyBadInput},
		{"Concurrent", testTallyConcurrent},
		{"Closed", testTallyClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, close := newStore(t)
			c.run(t, s, close)
		})
	}
}

func tallyAdd(t *testing.T, s tally.Store, name string, n, want int64) {
	t.Helper()
	got, err := s.Add(context.Background(), name, n)
	if err != nil || got != want {
		t.Fatalf("Add(%q, %d) = %d, %v; want %d", name, n, got, err, want)
	}
}

func tallyGet(t *testing.T, s tally.Store, name string, want int64) {
	t.Helper()
	got, err := s.Get(context.Background(), name)
	if err != nil || got != want {
		t.Fatalf("Get(%q) = %d, %v; want %d", name, got, err, want)
	}
}

// Adds accumulate, by a signed amount, per name; a name never added to
// reads 0.
func testTallyAddGet(t *testing.T, s tally.Store, _ func()) {
	tallyGet(t, s, "a", 0)
	tallyAdd(t, s, "a", 5, 5)
	tallyAdd(t, s, "a", -7, -2)
	tallyAdd(t, s, "b", 1, 1)
	tallyGet(t, s, "a", -2)
	tallyGet(t, s, "b", 1)
	long := strings.Repeat("x", tally.MaxName)
	tallyAdd(t, s, long, 3, 3)
	tallyGet(t, s, long, 3)
}

// Bad input fails with ErrInvalid and changes nothing.
func testTallyBadInput(t *testing.T, s tally.Store, _ func()) {
	ctx := context.Background()
	tallyAdd(t, s, "a", 1, 1)
	for _, c := range []struct {
		name string
		n    int64
	}{{"", 1}, {"a", 0}, {strings.Repeat("a", tally.MaxName+1), 1}} {
		if _, err := s.Add(ctx, c.name, c.n); !errors.Is(err, tally.ErrInvalid) {
			t.Errorf("Add(%.10q…, %d) = %v, want ErrInvalid", c.name, c.n, err)
		}
	}
	if _, err := s.Get(ctx, ""); !errors.Is(err, tally.ErrInvalid) {
		t.Errorf("Get(\"\") = %v, want ErrInvalid", err)
	}
	tallyGet(t, s, "a", 1)
}

// Concurrent adds are each applied once.
func testTallyConcurrent(t *testing.T, s tally.Store, _ func()) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := s.Add(context.Background(), "c", 2); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	tallyGet(t, s, "c", 400)
}

// A closed store fails with ErrClosed.
func testTallyClosed(t *testing.T, s tally.Store, close func()) {
	tallyAdd(t, s, "a", 1, 1)
	close()
	if _, err := s.Add(context.Background(), "a", 1); !errors.Is(err, tally.ErrClosed) {
		t.Errorf("Add after close = %v, want ErrClosed", err)
	}
	if _, err := s.Get(context.Background(), "a"); !errors.Is(err, tally.ErrClosed) {
		t.Errorf("Get after close = %v, want ErrClosed", err)
	}
}
