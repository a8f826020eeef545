package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Migrations are numbered NNNN_name.sql files, applied in order. A released file is never
// edited: a schema change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey is the advisory lock that serialises migrations of one database ("sailtui").
const migrateLockKey int64 = 0x7361696c747569

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	paths, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, p := range paths {
		base := strings.TrimSuffix(strings.TrimPrefix(p, "migrations/"), ".sql")
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number", p)
		}
		body, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		// A gap or duplicate would make "version N applied" mean different schemas.
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies the pending migrations in one transaction holding a transaction-scoped
// advisory lock: processes starting together queue on the lock, and the later ones find the
// work done. DDL is transactional in PostgreSQL, so a failed migration leaves nothing behind.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	latest := len(ms)
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     NOT NULL PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		cur, err := checkVersion(ctx, tx, latest)
		if err != nil {
			return err
		}
		for _, m := range ms[cur:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`,
				m.version, m.name); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// checkVersion returns the schema version of the database, refusing one newer than latest: its
// tables may mean things this binary does not know, and writing them could corrupt its data.
func checkVersion(ctx context.Context, tx pgx.Tx, latest int) (int, error) {
	var cur int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&cur); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if cur > latest {
		return cur, fmt.Errorf("database schema version %d is newer than this sailtui supports (%d): "+
			"it was written by a newer sailtui; upgrade sailtui or use another database", cur, latest)
	}
	return cur, nil
}
