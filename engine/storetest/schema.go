package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// Schema is what the migration tests need of a SQL store, bound to one new, empty database.
type Schema struct {
	// Open opens a new handle on the database; the caller closes it.
	Open func(ctx context.Context) (engine.Store, error)
	// Versions reads COUNT(*) and MAX(version) of schema_migrations through s.
	Versions func(t *testing.T, s engine.Store) (n, latest int)
	// Forge records version 999 as applied through s, as a newer sailtui would have.
	Forge func(t *testing.T, s engine.Store)
	// Migrations is how many migrations this binary has.
	Migrations int
}

// RunSchema runs the migration tests: a reopen applies nothing twice and loses nothing,
// handles opening a new database at once migrate it once, and a schema newer than the binary
// is refused. newSchema binds a Schema to a new database for each test.
func RunSchema(t *testing.T, newSchema func(t *testing.T) Schema) {
	t.Run("ReopenIsIdempotent", func(t *testing.T) {
		sc := newSchema(t)
		s := mustOpen(t, sc)
		if err := s.CreateProject(t.Context(), engine.Project{ID: "p1", Slug: "kept", Status: engine.StatusActive}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			s := mustOpen(t, sc)
			if _, err := s.GetProject(t.Context(), "kept"); err != nil {
				t.Errorf("project lost on reopen: %v", err)
			}
			if n, latest := sc.Versions(t, s); n != sc.Migrations || latest != sc.Migrations {
				t.Errorf("schema_migrations has %d rows up to %d, want %d", n, latest, sc.Migrations)
			}
			_ = s.Close()
		}
	})
	// Processes starting together on a new database must not apply a migration twice.
	t.Run("ConcurrentFirstOpen", func(t *testing.T) {
		sc := newSchema(t)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				s, err := sc.Open(t.Context())
				if err == nil {
					err = s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("RefusesNewerSchema", func(t *testing.T) {
		sc := newSchema(t)
		s := mustOpen(t, sc)
		sc.Forge(t, s)
		_ = s.Close()
		s, err := sc.Open(t.Context())
		if err == nil {
			_ = s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), "999") {
			t.Fatalf("Open of a newer schema: err = %v, want a refusal naming version 999", err)
		}
	})
}

func mustOpen(t *testing.T, sc Schema) engine.Store {
	t.Helper()
	s, err := sc.Open(t.Context())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}
