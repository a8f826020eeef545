package main

import (
	"context"
	"fmt"
	"path/filepath"

	xunix "golang.org/x/sys/unix"

	"github.com/sailtui/sailtui/backends/postgres"
	"github.com/sailtui/sailtui/backends/sqlite"
	"github.com/sailtui/sailtui/engine"
)

// openStore picks the Store and the Notifier that goes with it: PostgreSQL with LISTEN/NOTIFY
// when DATABASE_URL is set, else the embedded SQLite database in the state directory with the
// in-process notifier (nil). close releases both.
func openStore(ctx context.Context, cfg config) (engine.Store, engine.Notifier, func(), error) {
	if cfg.DatabaseURL == "" {
		path := filepath.Join(cfg.StateDir, "sailtui.db")
		if cfg.ReadOnly && xunix.Access(cfg.StateDir, xunix.W_OK) != nil {
			// A read-only look at a state directory this process cannot write.
			store, err := sqlite.OpenReadOnly(ctx, path)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("open store in %s (not writable, so read-only): %w", cfg.StateDir, err)
			}
			return store, nil, func() { store.Close() }, nil
		}
		store, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("open store in %s: %w", cfg.StateDir, err)
		}
		return store, nil, func() { store.Close() }, nil
	}
	store, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{MaxConns: int32(cfg.DBPoolSize), StatementTimeout: cfg.DBStatementTimeout})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open store (DATABASE_URL): %w; check DATABASE_URL and that the server is up (nothing was changed): %w", err, errUnreachable)
	}
	notifier, err := postgres.NewNotifier(ctx, store.Pool())
	if err != nil {
		store.Close()
		return nil, nil, nil, fmt.Errorf("listen for events on %s: %w", store.Describe(), err)
	}
	return store, notifier, func() { notifier.Close(); store.Close() }, nil
}
