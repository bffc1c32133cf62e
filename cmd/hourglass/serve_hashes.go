package main

import (
	"log/slog"

	"github.com/hourglass-io/hourglass"
	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// openHashes returns the expiring hashes of the back end and the Sweeper
// that expires their due fields (and so emits their events), not started,
// its count exported on metrics. Every server sharing a store may sweep
// it: each sweep is atomic, so they share the work.
func openHashes(b *hourglass.Backend, log *slog.Logger, metrics *httpapi.Metrics) (*ttlhash.Hashes, *ttlhash.Sweeper, error) {
	if b.Hashes == nil {
		return nil, nil, nil
	}
	h, err := ttlhash.New(b.Hashes, nil)
	if err != nil {
		return nil, nil, err
	}
	w, err := ttlhash.NewSweeper(b.Hashes, &ttlhash.SweeperOptions{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	metrics.WatchSweeper(w)
	return h, w, nil
}

func startSweeper(w *ttlhash.Sweeper, log *slog.Logger) error {
	if w == nil {
		return nil
	}
	if err := w.Start(); err != nil {
		return err
	}
	log.Info("ttlhash sweeper started")
	return nil
}

func stopSweeper(w *ttlhash.Sweeper, log *slog.Logger) {
	if w == nil {
		return
	}
	w.Close()
	log.Info("ttlhash sweeper stopped", "fields_expired", w.Expired())
}
