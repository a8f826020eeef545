package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/sailtui/sailtui/backends/dirstore"
	"github.com/sailtui/sailtui/engine"
)

// openObjects picks the ObjectStore for snapshot archives: a directory in the state directory.
func openObjects(_ context.Context, cfg config) (engine.ObjectStore, error) {
	objects, err := dirstore.New(filepath.Join(cfg.StateDir, "objects"))
	if err != nil {
		return nil, fmt.Errorf("object store: %w", err)
	}
	return objects, nil
}
