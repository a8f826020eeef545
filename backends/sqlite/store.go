// Package sqlite is the embedded engine.Store: one SQLite file (modernc.org/sqlite, no cgo) that
// several goroutines and several sailtui processes may use at once.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/schema"
)

// busyTimeout is how long a statement waits for another process's write lock before failing.
const busyTimeout = 10 * time.Second

// Store implements engine.Store on an SQLite file.
type Store struct {
	db   *sql.DB
	path string
	// writeSem serialises this process's write transactions: goroutines queue on a channel
	// instead of polling SQLite's busy handler. Other processes still wait on busy_timeout.
	writeSem chan struct{}

	// changed is the prepared incremental read: a console asks it twice a second, and
	// preparing it each time was most of what an idle console's watcher cost.
	changedMu sync.Mutex
	changed   *sql.Stmt
}

var _ engine.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and brings its schema up to date.
// It refuses a database whose schema is newer than this binary knows.
func Open(ctx context.Context, path string) (*Store, error) {
	dsn, err := buildDSN(path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	if err := enableWAL(ctx, path); err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	keepConns(db)
	s := &Store{db: db, path: path, writeSem: make(chan struct{}, 1)}
	if err := s.init(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	return s, nil
}

// OpenReadOnly opens the database at path for reading only, for a state directory this
// process cannot write (a read-only mount, --readonly on a copy): nothing is created, migrated
// or switched to WAL. The file is opened immutable, as SQLite cannot otherwise read a WAL
// database without writing its shared-memory file; so it must not be written meanwhile, and
// any write through the store fails. A schema older than this binary's is refused, with the
// way out.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if _, err := buildDSN(path); err != nil {
		return nil, fmt.Errorf("open sqlite store read-only: %w", err)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open sqlite store %s read-only: %w", path, err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("immutable", "1")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s read-only: %w", path, err)
	}
	keepConns(db)
	s := &Store{db: db, path: path, writeSem: make(chan struct{}, 1)}
	ms, err := schema.Load(migrationFiles, "migrations")
	if err == nil {
		var cur int
		if err = db.QueryRowContext(ctx, schema.VersionQuery).Scan(&cur); err == nil && cur != len(ms) {
			err = fmt.Errorf("database schema version %d, this sailtui needs %d: open it once where it can be written to migrate it", cur, len(ms))
		}
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite store %s read-only: %w", path, err)
	}
	return s, nil
}

// idleConns is how many connections the pool keeps open between uses: as many as a console
// uses at once (its usage reads run 8 side by side). database/sql keeps 2 by default, so every
// burst wider than that opened connections and closed them again, and opening one is costly
// here (its schema is parsed again on first use): that churn was most of what an idle
// console's 30 s resync cost. An idle connection holds only the pages it has read.
const idleConns = 8

func keepConns(db *sql.DB) { db.SetMaxIdleConns(idleConns) }

// buildDSN sets, on every pooled connection: BEGIN IMMEDIATE for write transactions (a deferred
// transaction that later upgrades to a write lock can fail with SQLITE_BUSY instead of waiting),
// the busy timeout and foreign keys. WAL is a property of the file, set once by enableWAL.
func buildDSN(path string) (string, error) {
	switch {
	case path == "":
		return "", fmt.Errorf("%w: empty database path", engine.ErrBadInput)
	case strings.HasPrefix(path, ":memory:") || strings.HasPrefix(path, "file:"):
		// Each pooled connection would get its own in-memory database.
		return "", fmt.Errorf("%w: %q: a file path is required", engine.ErrBadInput, path)
	case strings.ContainsRune(path, '?'):
		// The driver cuts a plain path at its first '?' to find the DSN parameters.
		return "", fmt.Errorf("%w: database path %q contains '?'", engine.ErrBadInput, path)
	}
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	return path + "?" + q.Encode(), nil
}

// enableWAL puts the file in WAL mode (readers never block the writer; the mode persists). The
// switch needs an exclusive lock and SQLite reports SQLITE_BUSY at once rather than waiting on
// busy_timeout, so when several processes open a new file together the losers retry.
func enableWAL(ctx context.Context, path string) error {
	if inWAL(path) {
		return nil
	}
	db, err := sql.Open("sqlite", path+"?_busy_timeout="+fmt.Sprint(busyTimeout.Milliseconds()))
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(busyTimeout)
	for {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil {
			return nil // init reports a file that refused WAL
		}
		if sqliteCode(err)&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return fmt.Errorf("enable WAL: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// inWAL reports whether the database file at path is in WAL mode already, from its header
// (bytes 18 and 19, the file format's write and read versions, are 2 in WAL mode): every open
// but a new file's, which then need not open a connection of its own to switch it. A file it
// cannot read is left to the switch, which reports it.
func inWAL(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false
	}
	return string(h[:16]) == "SQLite format 3\x00" && h[18] == 2 && h[19] == 2
}

func (s *Store) init(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("check journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, want wal (is the file on a filesystem without shared memory?)", mode)
	}
	return s.migrate(ctx)
}

// Describe names the store for humans.
func (s *Store) Describe() string { return "sqlite " + s.path }

// Close closes the database.
func (s *Store) Close() error {
	s.changedMu.Lock()
	if s.changed != nil {
		_ = s.changed.Close()
	}
	s.changedMu.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close sqlite store %s: %w", s.path, err)
	}
	return nil
}

// write runs fn in one write transaction (BEGIN IMMEDIATE through the DSN), committing when fn
// returns nil.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeSem }()

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func sqliteCode(err error) int {
	var se *sqlitedrv.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// isUnique reports a primary key or unique index violation.
func isUnique(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// isForeignKey reports a row naming a parent (project, container) that does not exist.
func isForeignKey(err error) bool {
	return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// zeroMicros stores the zero time.Time, so optional times need no NULLs and sort first.
var zeroMicros = time.Time{}.UnixMicro()

func toMicros(t time.Time) int64 {
	if t.IsZero() {
		return zeroMicros
	}
	return t.UnixMicro()
}

func fromMicros(v int64) time.Time {
	if v == zeroMicros {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// queryAll runs a query and scans every row of its result with scan: the one row loop of the
// store, what pgx.CollectRows is to the PostgreSQL store.
func queryAll[T any](ctx context.Context, db *sql.DB, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	return collect(rows, err, scan)
}

// collect scans every row of rows with scan and closes them; err is the query's error.
func collect[T any](rows *sql.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// changedOne reports whether an INSERT or UPDATE changed exactly one row: a conditional write
// that won.
func changedOne(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
