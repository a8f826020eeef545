package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sailtui/sailtui/engine/schema"
)

// Migrations are numbered NNNN_name.sql files, applied in order. A released file is never
// edited: a schema change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey is the advisory lock that serialises migrations of one database ("sailtui").
const migrateLockKey int64 = 0x7361696c747569

// migrate applies the pending migrations in one transaction holding a transaction-scoped
// advisory lock: processes starting together queue on the lock, and the later ones find the
// work done. DDL is transactional in PostgreSQL, so a failed migration leaves nothing behind.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := schema.Load(migrationFiles, "migrations")
	if err != nil {
		return err
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
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`,
				m.Version, m.Name); err != nil {
				return fmt.Errorf("record migration %s: %w", m.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// checkVersion returns the schema version of the database, refusing one newer than latest
// (schema.CheckVersion).
func checkVersion(ctx context.Context, tx pgx.Tx, latest int) (int, error) {
	var cur int
	if err := tx.QueryRow(ctx, schema.VersionQuery).Scan(&cur); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return cur, schema.CheckVersion(cur, latest)
}
