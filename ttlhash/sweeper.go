package ttlhash

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// SweeperOptions configure a Sweeper. Nil or the zero value means the
// defaults.
type SweeperOptions struct {
	// Interval is the longest a Sweeper waits between two passes over the
	// shards. Between passes it sleeps until the next deadline the store
	// reported, and a store that announces sooner deadlines (DueNotifier:
	// Redis does) wakes it earlier, so Interval only bounds how long a lost
	// announcement (a reconnect) can delay expiry. Default 1s with such a
	// store, 5ms with any other.
	Interval time.Duration
	// Batch is about how many due entries one Sweep call of a shard may
	// take. Default 256.
	Batch int
	// Logger receives the store's failures (the Sweeper retries after
	// Interval). Default slog.Default().
	Logger *slog.Logger
}

// Sweeper expires due fields of a Store and so emits their events: one
// goroutine, started by Start and stopped by Close. Any number of
// Sweepers, in any number of processes, may sweep the same store: each
// Sweep is atomic, so they share the work without duplicating it. (The
// embedded engine expires fields on its own timer; a Sweeper on it only
// adds passes.)
type Sweeper struct {
	s        Store
	interval time.Duration
	batch    int
	log      *slog.Logger

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	closed  bool
	expired int64
}

// NewSweeper returns a Sweeper of s, not started. It fails with ErrInvalid
// when opts are out of range.
func NewSweeper(s Store, opts *SweeperOptions) (*Sweeper, error) {
	w := &Sweeper{s: s, interval: 5 * time.Millisecond, batch: 256, log: slog.Default()}
	if _, ok := s.(DueNotifier); ok {
		w.interval = time.Second
	}
	if opts != nil {
		if opts.Interval < 0 {
			return nil, invalid("SweeperOptions.Interval", "%v: want 0 (default) or positive", opts.Interval)
		}
		if opts.Batch < 0 || opts.Batch > 100000 {
			return nil, invalid("SweeperOptions.Batch", "%d: want 0 (default) to 100000", opts.Batch)
		}
		if opts.Interval > 0 {
			w.interval = opts.Interval
		}
		if opts.Batch > 0 {
			w.batch = opts.Batch
		}
		if opts.Logger != nil {
			w.log = opts.Logger
		}
	}
	return w, nil
}

// Start starts sweeping. It returns ErrClosed after Close and does nothing
// when already started.
func (w *Sweeper) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.done != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go w.run(ctx)
	return nil
}

// Expired counts the fields this Sweeper has expired.
func (w *Sweeper) Expired() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expired
}

// Close stops the Sweeper and waits for its goroutine to end.
func (w *Sweeper) Close() error {
	w.mu.Lock()
	w.closed = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

func (w *Sweeper) run(ctx context.Context) {
	defer close(w.done)
	n := w.s.Shards()
	timer := time.NewTimer(0)
	defer timer.Stop()
	// A sooner deadline set anywhere wakes the sweeper at once; it then
	// sweeps, and sleeps until the next deadline the pass reports.
	woken := make(chan struct{}, 1)
	if dn, ok := w.s.(DueNotifier); ok {
		stop, err := dn.ListenDue(ctx, func() {
			select {
			case woken <- struct{}{}:
			default:
			}
		})
		if err != nil {
			w.log.Warn("ttlhash: listening for deadlines failed; sweeping every Interval", "interval", w.interval, "err", err)
		} else {
			defer stop()
		}
	}
	start := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-woken:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
		wait := w.interval
		if all, ok := w.s.(ShardSweeper); ok {
			for {
				rs, err := all.SweepAll(ctx, w.batch)
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, ErrClosed) {
						return
					}
					w.log.Warn("ttlhash: sweep failed", "err", err)
					break
				}
				more := false
				for _, r := range rs {
					w.count(r)
					more = more || r.More
					if !r.More && r.Next >= 0 && r.Next < wait {
						wait = r.Next
					}
				}
				if !more || ctx.Err() != nil {
					break
				}
			}
			timer.Reset(wait)
			continue
		}
		// Start each pass at another shard, so that sweepers spread out.
		start = (start + 1) % n
		for i := 0; i < n; i++ {
			shard := (start + i) % n
			for {
				r, err := w.s.Sweep(ctx, shard, w.batch)
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, ErrClosed) {
						return
					}
					w.log.Warn("ttlhash: sweep failed", "shard", shard, "err", err)
					break
				}
				w.count(r)
				if !r.More {
					if r.Next >= 0 && r.Next < wait {
						wait = r.Next
					}
					break
				}
				if ctx.Err() != nil {
					return
				}
			}
		}
		timer.Reset(wait)
	}
}

func (w *Sweeper) count(r SweepResult) {
	if r.Expired > 0 {
		w.mu.Lock()
		w.expired += int64(r.Expired)
		w.mu.Unlock()
	}
}
