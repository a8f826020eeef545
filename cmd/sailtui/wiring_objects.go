package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/sailtui/sailtui/backends/dirstore"
	s3store "github.com/sailtui/sailtui/backends/s3"
	"github.com/sailtui/sailtui/engine"
)

// openObjects picks the ObjectStore for snapshot archives: the S3 bucket named by
// S3_BUCKET_NAME (credentials from the standard AWS chain, kept in this process), else a
// directory in the state directory.
func openObjects(ctx context.Context, cfg config, log *slog.Logger) (engine.ObjectStore, error) {
	s3cfg, ok, err := s3store.ConfigFromEnv()
	if err != nil {
		return nil, fmt.Errorf("object store: %w: %w", err, engine.ErrBadInput)
	}
	if ok {
		// The archive sandwich puts S3_PROJECTS_PREFIX in front of its keys already.
		s3cfg.Prefix = ""
		s3cfg.Logger = log
		store, err := s3store.New(ctx, s3cfg)
		if err != nil {
			return nil, fmt.Errorf("object store: %w", err)
		}
		return store, nil
	}
	objects, err := dirstore.New(filepath.Join(cfg.StateDir, "objects"))
	if err != nil {
		return nil, fmt.Errorf("object store: %w", err)
	}
	return objects, nil
}
