package httpapi

import (
	"context"

	"github.com/hourglass-io/hourglass/queue"
)

// The dashboard's store view (GET /dashboard/panels?view=store): what the
// store says of itself (Server.StoreFacts: on Redis its version, memory
// and clients; on the embedded engine its log and last snapshot) and the
// queue's totals (queue.Stats).

// StoreFact is one line of the store view: a name and its value, as the
// store reports it.
type StoreFact struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type storePanelData struct {
	Kind      string
	Facts     []StoreFact
	FactsErr  bool // StoreFacts failed
	Stats     queue.Stats
	History   bool // the store keeps the charts' counters
	KeepHours int
}

func storePanel(ctx context.Context, s *Server) (any, error) {
	d := storePanelData{Kind: s.StoreKind, History: s.counterLog() != nil, KeepHours: int(SeriesKeep.Hours())}
	st, err := s.Queue.Stats(ctx)
	if err != nil {
		return nil, err
	}
	d.Stats = st
	if s.StoreFacts != nil {
		facts, err := s.StoreFacts(ctx)
		if err != nil {
			s.logger().Warn("dashboard: reading the store's facts", "err", err)
			d.FactsErr = true
		}
		d.Facts = facts
	}
	return d, nil
}
