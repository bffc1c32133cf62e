package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// testCounterLog: samples recorded under a minute are read back by minute
// then tube; a later record of the same (minute, tube) replaces the
// sample; a minute is kept for its first record's keep and then no longer
// read; bad arguments are refused and change nothing.
func testCounterLog(t *testing.T, s *suite) {
	e := s.env(t)
	cl, ok := e.raw.(queue.CounterLog)
	if !ok {
		t.Fatalf("%T does not implement queue.CounterLog", e.raw)
	}
	sample := func(m int64, tube string, n int64) queue.CounterSample {
		return queue.CounterSample{Minute: m, Tube: tube, Puts: n, Reserves: n + 1, Deletes: n + 2, Buries: n + 3, Timeouts: n + 4}
	}
	m0 := epoch.Unix() / 60
	const keep = 2 * time.Hour
	e.ok("record", cl.RecordCounters(e.ctx, m0, keep, []queue.CounterSample{sample(m0, "mail", 10), sample(m0, "billing", 1)}))
	e.ok("record again", cl.RecordCounters(e.ctx, m0, keep, []queue.CounterSample{sample(m0, "mail", 12)}))
	e.advance(time.Hour)
	e.ok("record later", cl.RecordCounters(e.ctx, m0+60, keep, []queue.CounterSample{sample(m0+60, "mail", 40)}))
	e.ok("record nothing", cl.RecordCounters(e.ctx, m0+61, keep, nil))

	read := func(step string, from, to int64, want []queue.CounterSample) {
		t.Helper()
		got, err := cl.CounterHistory(e.ctx, from, to)
		if err != nil {
			t.Fatalf("%s: CounterHistory: %v", step, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: CounterHistory(%d, %d) (-want +got):\n%s", step, from, to, diff)
		}
	}
	read("both minutes", m0-5, m0+70, []queue.CounterSample{sample(m0, "billing", 1), sample(m0, "mail", 12), sample(m0+60, "mail", 40)})
	read("the later minute", m0+1, m0+60, []queue.CounterSample{sample(m0+60, "mail", 40)})
	read("no minute", m0+1, m0+59, nil)

	// The first minute's keep ends 2h after its first record: a record in
	// it since does not extend it.
	e.advance(time.Hour - time.Millisecond)
	read("1ms before the keep ends", m0, m0, []queue.CounterSample{sample(m0, "billing", 1), sample(m0, "mail", 12)})
	e.advance(time.Millisecond)
	read("the keep ended", m0-5, m0+70, []queue.CounterSample{sample(m0+60, "mail", 40)})

	for _, c := range []struct {
		name    string
		minute  int64
		keep    time.Duration
		samples []queue.CounterSample
		want    error
	}{
		{"keep too short", m0, time.Second, nil, queue.ErrInvalid},
		{"keep too long", m0, queue.MaxCounterKeep + time.Minute, nil, queue.ErrInvalid},
		{"negative minute", -1, keep, nil, queue.ErrInvalid},
		{"sample of another minute", m0 + 70, keep, []queue.CounterSample{sample(m0+71, "mail", 1)}, queue.ErrInvalid},
		{"bad tube", m0 + 70, keep, []queue.CounterSample{sample(m0+70, "no spaces", 1)}, queue.ErrInvalidTube},
		{"too many", m0 + 70, keep, make([]queue.CounterSample, queue.MaxCounterSamples+1), queue.ErrInvalid},
	} {
		if err := cl.RecordCounters(e.ctx, c.minute, c.keep, c.samples); !errors.Is(err, c.want) {
			t.Errorf("%s: RecordCounters: %v, want %v", c.name, err, c.want)
		}
	}
	for _, r := range [][2]int64{{5, 4}, {-1, 3}, {0, queue.MaxCounterMinutes}} {
		if _, err := cl.CounterHistory(e.ctx, r[0], r[1]); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("CounterHistory(%d, %d): %v, want ErrInvalid", r[0], r[1], err)
		}
	}
	read("after the refusals", m0-5, m0+75, []queue.CounterSample{sample(m0+60, "mail", 40)})
}
