package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/sailtui/sailtui/backends/sqlite"
	"github.com/sailtui/sailtui/engine"
)

// openStore picks the Store and the Notifier that goes with it: the embedded SQLite database in
// the state directory, with the in-process notifier (nil).
func openStore(ctx context.Context, cfg config) (engine.Store, engine.Notifier, error) {
	store, err := sqlite.Open(ctx, filepath.Join(cfg.StateDir, "sailtui.db"))
	if err != nil {
		return nil, nil, fmt.Errorf("open store in %s: %w", cfg.StateDir, err)
	}
	return store, nil, nil
}
