package postgres

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/schema"
	"github.com/sailtui/sailtui/engine/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func openDSN(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(t.Context(), dsn, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) engine.Store {
		s, err := Open(t.Context(), pgtest.Start(t), Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s // storetest closes it
	})
}

// Several pools on one database race like several processes: only PostgreSQL keeps them apart.
func TestSeveralHandlesOneDatabase(t *testing.T) {
	dsn := pgtest.Start(t)
	var handles []engine.Store
	for range 3 {
		handles = append(handles, openDSN(t, dsn))
	}
	storetest.RunConcurrent(t, handles)
}

// The migration tests of every SQL store, on a new database each. Without the advisory lock
// some of the concurrent first opens would fail on "relation already exists".
func TestSchema(t *testing.T) {
	ms, err := schema.Load(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	storetest.RunSchema(t, func(t *testing.T) storetest.Schema {
		dsn := pgtest.Start(t)
		return storetest.Schema{
			Open: func(ctx context.Context) (engine.Store, error) { return Open(ctx, dsn, Options{MaxConns: 2}) },
			Versions: func(t *testing.T, s engine.Store) (n, latest int) {
				if err := s.(*Store).pool.QueryRow(t.Context(), `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &latest); err != nil {
					t.Fatal(err)
				}
				return n, latest
			},
			Forge: func(t *testing.T, s engine.Store) {
				if _, err := s.(*Store).pool.Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future')`); err != nil {
					t.Fatal(err)
				}
			},
			Migrations: len(ms),
		}
	})
}

func TestOpenRejectsBadDSN(t *testing.T) {
	_, err := Open(t.Context(), "postgres://u:secret@[::1", Options{})
	if !errors.Is(err, engine.ErrBadInput) || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open of a malformed DSN: err = %v, want ErrBadInput without the password", err)
	}
}

// The DSN may be empty: libpq's PG* variables name the database then.
func TestOpenFromEnvironment(t *testing.T) {
	dsn := pgtest.Start(t)
	cfg := parse(t, dsn)
	t.Setenv("PGHOST", cfg.Host)
	t.Setenv("PGPORT", itoa(int(cfg.Port)))
	t.Setenv("PGUSER", cfg.User)
	t.Setenv("PGDATABASE", cfg.Database)
	t.Setenv("PGSSLMODE", "disable")
	s := openDSN(t, "")
	want := "postgres " + cfg.Host + ":" + itoa(int(cfg.Port)) + "/" + cfg.Database
	if got := s.Describe(); got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}

func TestConnectionSettings(t *testing.T) {
	dsn := pgtest.Start(t)
	withPassword := strings.Replace(dsn, "postgres@", "postgres:hunter2@", 1)
	s, err := Open(t.Context(), withPassword, Options{MaxConns: 3, StatementTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if d := s.Describe(); strings.Contains(d, "hunter2") || !strings.HasPrefix(d, "postgres 127.0.0.1:") {
		t.Errorf("Describe() = %q, want host:port/db without the password", d)
	}
	if got := s.pool.Config().MaxConns; got != 3 {
		t.Errorf("MaxConns = %d, want 3", got)
	}
	// Every pooled connection, not only the first, carries the settings.
	ctx := t.Context()
	var conns []*pgxpool.Conn
	for i := range 3 {
		// Held until all three are checked, so they are three different connections.
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		conns = append(conns, c)
		var app, timeout string
		if err := c.QueryRow(ctx, `SELECT current_setting('application_name'), current_setting('statement_timeout')`).Scan(&app, &timeout); err != nil {
			t.Fatal(err)
		}
		if app != "sailtui" || timeout != "1500ms" {
			t.Errorf("connection %d: application_name=%q statement_timeout=%q", i, app, timeout)
		}
	}
	// The timeout really ends statements.
	_, err = conns[0].Exec(ctx, `SELECT pg_sleep(5)`)
	if err == nil || !strings.Contains(err.Error(), "statement timeout") {
		t.Errorf("pg_sleep(5) with a 1.5s statement timeout: err = %v", err)
	}
}

// Strings PostgreSQL cannot store are the caller's bad input, not a database failure.
func TestUnstorableText(t *testing.T) {
	s := openDSN(t, pgtest.Start(t))
	err := s.CreateProject(t.Context(), engine.Project{ID: "p1", Slug: "nul\x00byte"}, nil, nil)
	if !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("slug with a NUL byte: err = %v, want ErrBadInput", err)
	}
	_, err = s.GetProject(t.Context(), "bad\xffutf8")
	if !errors.Is(err, engine.ErrBadInput) {
		t.Errorf("lookup with invalid UTF-8: err = %v, want ErrBadInput", err)
	}
}
