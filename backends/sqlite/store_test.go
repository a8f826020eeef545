package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/schema"
	"github.com/sailtui/sailtui/engine/storetest"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "sailtui.db"))
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) engine.Store { return openTemp(t) })
}

// TestContractListInParts runs the contract with the whole list read in three parts from a
// few projects on (a fleet of thousands, on a machine of at least three cores), the first
// part held back so that the parts' snapshots lie apart while writers run.
func TestContractListInParts(t *testing.T) {
	rows, parts, starting := listPartRows, listParts, listPartStarting
	listPartRows, listParts = 2, 3
	listPartStarting = func(part int) {
		if part == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Cleanup(func() { listPartRows, listParts, listPartStarting = rows, parts, starting })
	storetest.Run(t, func(t *testing.T) engine.Store { return openTemp(t) })
}

// Two handles on one file race like two processes would: each has its own connection pool and
// its own write semaphore, so only SQLite's locking keeps them apart.
func TestTwoHandlesOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := openAt(t, path), openAt(t, path)
	defer a.Close()
	defer b.Close()
	storetest.RunConcurrent(t, []engine.Store{a, b})
}

// The migration tests of every SQL store, on a new file each.
func TestSchema(t *testing.T) {
	ms, err := schema.Load(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	storetest.RunSchema(t, func(t *testing.T) storetest.Schema {
		path := filepath.Join(t.TempDir(), "sailtui.db")
		return storetest.Schema{
			Open: func(ctx context.Context) (engine.Store, error) { return Open(ctx, path) },
			Versions: func(t *testing.T, s engine.Store) (n, latest int) {
				if err := s.(*Store).db.QueryRowContext(t.Context(), `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &latest); err != nil {
					t.Fatal(err)
				}
				return n, latest
			},
			Forge: func(t *testing.T, s engine.Store) {
				if _, err := s.(*Store).db.ExecContext(t.Context(),
					`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '0999_future', 0)`); err != nil {
					t.Fatal(err)
				}
			},
			Migrations: len(ms),
		}
	})
}

func TestOpenRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", filepath.Join(t.TempDir(), "a?b.db")} {
		if s, err := Open(t.Context(), p); err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func TestConnectionSettings(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	if got, want := s.Describe(), "sqlite "+s.path; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	// Every pooled connection, not only the first, must carry the settings; one the full list
	// read through a memory map comes back unmapped.
	ctx := t.Context()
	if _, err := s.ListProjectsChangedSince(ctx, 0); err != nil {
		t.Fatal(err)
	}
	conns := make([]interface{ Close() error }, 3)
	for i := range conns {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		var mode string
		var fk, busy, mmap int
		if err := c.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&mmap); err != nil {
			t.Fatal(err)
		}
		if mmap != 0 {
			t.Errorf("connection %d: mmap_size=%d: a pooled connection maps the database (and keeps what it read resident)", i, mmap)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || fk != 1 || busy != int(busyTimeout.Milliseconds()) {
			t.Errorf("connection %d: journal_mode=%s foreign_keys=%d busy_timeout=%d", i, mode, fk, busy)
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
}

// A burst of reads as wide as a console's keeps its connections for the next one: opening a
// connection again each time was most of an idle console's periodic cost.
func TestConnectionsKeptBetweenBursts(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	ctx := t.Context()
	for burst := range 2 {
		conns := make([]interface{ Close() error }, idleConns)
		for i := range conns {
			c, err := s.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		for _, c := range conns {
			_ = c.Close()
		}
		if st := s.db.Stats(); st.MaxIdleClosed != 0 || st.Idle != idleConns {
			t.Errorf("after burst %d of %d: %d connections closed for too many idle, %d idle, want 0 and %d", burst, idleConns, st.MaxIdleClosed, st.Idle, idleConns)
		}
	}
}

// The sweep's queries must not scan the whole projects table.
func TestSweepQueriesUseIndexes(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	for _, tc := range []struct{ query, index string }{
		{`SELECT id FROM projects WHERE status = 'active' AND op_id = '' AND last_activity < 0 ORDER BY last_activity, id`, "projects_idle"},
		{`SELECT id FROM projects WHERE op_id <> '' ORDER BY op_heartbeat, id`, "projects_held"},
		{`SELECT id FROM snapshots WHERE status = 'deleted' AND deleted_at < 0`, "snapshots_deleted"},
	} {
		plan := explain(t.Context(), t, s, tc.query)
		if !strings.Contains(plan, tc.index) {
			t.Errorf("plan for %q does not use %s:\n%s", tc.query, tc.index, plan)
		}
	}
}

func explain(ctx context.Context, t *testing.T, s *Store, q string) string {
	t.Helper()
	rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + "\n")
	}
	return b.String()
}

// Opening a store that is up to date takes no write lock: a console started while a sweep
// holds a write transaction opens at once, and reads, rather than wait on the writer.
func TestOpenUpToDateTakesNoWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sailtui.db")
	if inWAL(path) {
		t.Fatal("a file that is not there reads as in WAL mode")
	}
	writer := openAt(t, path)
	defer writer.Close()
	if !inWAL(path) {
		t.Fatal("a store's file does not read as in WAL mode")
	}
	ctx := t.Context()
	c, err := writer.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer c.ExecContext(context.Background(), "ROLLBACK")
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	begun := time.Now()
	s, err := Open(octx, path)
	if err != nil {
		t.Fatalf("open while another connection writes: %v (after %s)", err, time.Since(begun).Round(time.Millisecond))
	}
	defer s.Close()
	if _, err := s.ListProjectsChangedSince(octx, 0); err != nil {
		t.Fatalf("read while another connection writes: %v", err)
	}
}

// A database file in the rollback journal is switched to WAL when opened.
func TestOpenSwitchesRollbackFileToWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if inWAL(path) {
		t.Fatal("a rollback-journal file reads as in WAL mode")
	}
	openAt(t, path).Close()
	if !inWAL(path) {
		t.Fatal("open left the file out of WAL mode")
	}
}
