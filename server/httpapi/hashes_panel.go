package httpapi

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// The hashes panel. A ttlhash.Store cannot list its hashes (neither back
// end keeps an index of names that is cheap to read), so the panel shows
// the hashes this server's calls touched most recently (at most
// maxRecentHashes, the first panelHashes of them), and says so.
const (
	// panelHashes bounds the hashes the panel reads (one or two store
	// calls each).
	panelHashes = 30
	// panelHashFields bounds the fields the panel reads of a hash to find
	// its next expiries: a larger hash shows its count only.
	panelHashFields = 1000
	// panelExpiries is how many of a hash's next expiries the panel shows.
	panelExpiries = 3
)

// hashesPanelData is what the hashes panel shows.
type hashesPanelData struct {
	Hashes []panelHash
	// Remembered counts the hashes remembered, Read those of them read
	// (at most panelHashes); Hashes are those read that have fields: a
	// hash without a live field is not there (a read of a name nobody
	// wrote touches it all the same).
	Remembered, Read int
	Events           EventStatsReply
	// EventsErr: the event statistics could not be read.
	EventsErr bool
}

type panelHash struct {
	Name string
	Len  int
	// WithTTL counts the fields with a TTL; Next are the soonest
	// deadlines, as milliseconds from now. Read only when Len is at most
	// panelHashFields (Read says so).
	Read    bool
	WithTTL int
	Next    []panelExpiry
}

type panelExpiry struct {
	Field string
	InMS  int64
}

func hashesPanel(ctx context.Context, s *Server) (any, error) {
	names := s.hx.touched.list()
	d := hashesPanelData{Remembered: len(names)}
	if len(names) > panelHashes {
		names = names[:panelHashes]
	}
	d.Read = len(names)
	now := time.Now()
	for _, name := range names {
		h := s.Hashes.Hash(name)
		n, err := h.Len(ctx)
		if err != nil {
			if isOutcome(err) {
				continue
			}
			return nil, err
		}
		if n == 0 {
			continue
		}
		ph := panelHash{Name: name, Len: n}
		if n <= panelHashFields {
			es, err := h.GetAll(ctx)
			if err != nil && !isOutcome(err) {
				return nil, err
			}
			ph.Read = err == nil
			for _, e := range es {
				if e.Deadline.IsZero() {
					continue
				}
				ph.WithTTL++
				ph.Next = append(ph.Next, panelExpiry{Field: e.Name, InMS: max(e.Deadline.Sub(now), 0).Milliseconds()})
			}
			slices.SortFunc(ph.Next, func(a, b panelExpiry) int { return cmp.Compare(a.InMS, b.InMS) })
			if len(ph.Next) > panelExpiries {
				ph.Next = ph.Next[:panelExpiries]
			}
		}
		d.Hashes = append(d.Hashes, ph)
	}
	st, err := s.Hashes.EventStats(ctx)
	if err != nil {
		if !isOutcome(err) {
			return nil, err
		}
		d.EventsErr = true
	}
	d.Events = eventStatsOf(st)
	return d, nil
}

// recentHashes remembers the names of the hashes a Server's calls touched
// most recently, at most maxRecentHashes: the store cannot list its
// hashes, so the dashboard shows these.
type recentHashes struct {
	mu    sync.Mutex
	seq   uint64
	names map[string]uint64 // name -> when last touched (a sequence number)
}

// maxRecentHashes bounds the hashes the dashboard remembers.
const maxRecentHashes = 100

func (rh *recentHashes) note(name string) {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	if rh.names == nil {
		rh.names = map[string]uint64{}
	}
	rh.seq++
	rh.names[name] = rh.seq
	if len(rh.names) > maxRecentHashes {
		oldest, at := "", rh.seq
		for n, t := range rh.names {
			if t < at {
				oldest, at = n, t
			}
		}
		delete(rh.names, oldest)
	}
}

// list returns the names, most recently touched first.
func (rh *recentHashes) list() []string {
	rh.mu.Lock()
	defer rh.mu.Unlock()
	out := make([]string, 0, len(rh.names))
	for n := range rh.names {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(rh.names[b], rh.names[a]) })
	return out
}
