package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/sailtui/sailtui/engine/schema"
)

// Migrations are numbered NNNN_name.sql files, applied in order, each in its own transaction.
// A released file is never edited: a schema change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

func (s *Store) migrate(ctx context.Context) error {
	ms, err := schema.Load(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	latest := len(ms)
	// Up to date, as at every open but the first after an upgrade: no write lock is taken.
	// Otherwise every open took it six times (a BEGIN IMMEDIATE per migration), and a console
	// started while a sweep wrote waited for the sweep's transactions to start.
	var cur int
	if err := s.db.QueryRowContext(ctx, schema.VersionQuery).Scan(&cur); err == nil && cur == latest {
		return nil
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER NOT NULL PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`)
		if err != nil {
			return err
		}
		_, err = s.checkVersion(ctx, tx, latest)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range ms {
		err := s.write(ctx, func(tx *sql.Tx) error {
			// Checked again inside the write lock: another process may have migrated meanwhile.
			cur, err := s.checkVersion(ctx, tx, latest)
			if err != nil || cur >= m.Version {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// checkVersion returns the schema version of the database, refusing one newer than latest
// (schema.CheckVersion).
func (s *Store) checkVersion(ctx context.Context, tx *sql.Tx, latest int) (int, error) {
	var cur int
	if err := tx.QueryRowContext(ctx, schema.VersionQuery).Scan(&cur); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return cur, schema.CheckVersion(cur, latest)
}
