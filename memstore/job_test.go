package memstore

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
)

// TestJobHeap checks push, remove from anywhere and top against a sorted
// model, with many ties.
func TestJobHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := jobHeap{less: readyLess, byPri: true}
	var model []*job
	for i := range 5000 {
		if len(model) == 0 || rng.IntN(3) != 0 {
			j := &job{id: queue.ID(i + 1), pri: uint32(rng.IntN(5))}
			h.push(j)
			model = append(model, j)
		} else {
			k := rng.IntN(len(model))
			h.remove(model[k])
			if model[k].hidx != -1 {
				t.Fatal("removed job keeps an index")
			}
			model = slices.Delete(model, k, k+1)
		}
		if j, ok := h.check(); !ok {
			t.Fatalf("step %d: heap broken at job %d", i, j.id)
		}
		if h.len() != len(model) {
			t.Fatalf("step %d: %d jobs, want %d", i, h.len(), len(model))
		}
		if len(model) > 0 {
			least := slices.MinFunc(model, func(a, b *job) int {
				if readyLess(a, b) {
					return -1
				}
				return 1
			})
			if h.top() != least {
				t.Fatalf("step %d: top is job %d, want %d", i, h.top().id, least.id)
			}
		}
	}
	// Popping everything gives the order (priority, ID).
	var got []*job
	for h.len() > 0 {
		j := h.top()
		h.remove(j)
		got = append(got, j)
	}
	if !slices.IsSortedFunc(got, func(a, b *job) int {
		if readyLess(a, b) {
			return -1
		}
		return 1
	}) {
		t.Error("jobs not popped in order")
	}
}

// TestBuriedFIFO: buried jobs come out in the order they were buried, and
// one from the middle can go.
func TestBuriedFIFO(t *testing.T) {
	h := jobHeap{less: atLess}
	var js []*job
	for i := range 10 {
		j := &job{id: queue.ID(100 - i), at: int64(i + 1)} // IDs against the order
		js = append(js, j)
		h.push(j)
	}
	h.remove(js[4])
	for i, want := range js {
		if i == 4 {
			continue
		}
		if got := h.top(); got != want {
			t.Fatalf("buried #%d: job %d, want %d", i, got.id, want.id)
		}
		h.remove(want)
	}
}

func TestTubeHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var h tubeHeap
	tubes := make([]*tube, 50)
	for i := range tubes {
		tubes[i] = newTube("t", uint64(i+1))
	}
	for step := range 5000 {
		tb := tubes[rng.IntN(len(tubes))]
		next := int64(never)
		if rng.IntN(4) != 0 {
			next = int64(rng.IntN(100))
		}
		h.set(tb, next)
		var least int64 = never
		for _, x := range tubes {
			least = min(least, x.next)
			if (x.next == never) != (x.sidx < 0) {
				t.Fatalf("step %d: tube %d with deadline %d has index %d", step, x.seq, x.next, x.sidx)
			}
		}
		for i, x := range h {
			if x.sidx != i || i > 0 && x.next < h[(i-1)/2].next {
				t.Fatalf("step %d: heap broken at %d", step, i)
			}
		}
		if top := h.top(); top == nil && least != never || top != nil && top.next != least {
			t.Fatalf("step %d: top deadline wrong", step)
		}
	}
}

// TestJobHeapFirst checks first against the sorted heap, for every n, and
// that it leaves the heap as it was.
func TestJobHeapFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	h := jobHeap{less: readyLess, byPri: true}
	for i := range 300 {
		h.push(&job{id: queue.ID(i + 1), pri: uint32(rng.IntN(20))})
	}
	before := slices.Clone(h.s)
	sorted := slices.Clone(h.s)
	slices.SortFunc(sorted, func(a, b *job) int {
		if readyLess(a, b) {
			return -1
		}
		if readyLess(b, a) {
			return 1
		}
		return 0
	})
	for _, n := range []int{0, 1, 2, 7, 150, 300, 400} {
		var got []*job
		h.first(n, func(j *job) { got = append(got, j) })
		if want := sorted[:min(n, len(sorted))]; !slices.Equal(got, want) {
			t.Errorf("first(%d): %d jobs, not the %d least in order", n, len(got), len(want))
		}
	}
	if !slices.Equal(before, h.s) {
		t.Error("first changed the heap")
	}
}
