package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sailtui/sailtui/backends/internal/sqlstore"
	"github.com/sailtui/sailtui/engine"
)

const opCols = `id, project_id, kind, step, state, snapshot_id, owner, started_at, updated_at, finished_at, error, epoch`

func scanOp(row pgx.Row) (engine.Operation, error) {
	var op engine.Operation
	err := row.Scan(&op.ID, &op.ProjectID, &op.Kind, &op.Step, &op.State, &op.SnapshotID, &op.Owner,
		&op.StartedAt, &op.UpdatedAt, &op.FinishedAt, &op.Error, &op.Epoch)
	if err != nil {
		return engine.Operation{}, err
	}
	op.StartedAt, op.UpdatedAt, op.FinishedAt = fromDB(op.StartedAt), fromDB(op.UpdatedAt), fromDB(op.FinishedAt)
	return op, nil
}

// InsertOp journals a new operation.
func (s *Store) InsertOp(ctx context.Context, op engine.Operation) error {
	if op.ID == "" {
		return fmt.Errorf("insert op: %w: id is required", engine.ErrBadInput)
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if op.State == engine.OpRunning && op.Epoch > 0 {
			if err := checkHold(ctx, tx, op.ProjectID, engine.Hold{OpID: op.ID, Epoch: op.Epoch}); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO operations (`+opCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			op.ID, op.ProjectID, string(op.Kind), op.Step, string(op.State), op.SnapshotID, op.Owner,
			op.StartedAt, op.UpdatedAt, op.FinishedAt, op.Error, op.Epoch)
		return sqlstore.InsertRefused(err, isUnique(err), isForeignKey(err), "op", op.ProjectID)
	})
	if err != nil {
		return fmt.Errorf("insert %s op %s of project %s: %w", op.Kind, op.ID, op.ProjectID, badInput(err))
	}
	return nil
}

// UpdateOp replaces the stored fields of op.ID while the entry is at op.Epoch (and, for a running
// entry, the project is held by it at that epoch); the project it belongs to never changes.
// The project row is locked before the entry's, in the order a takeover's claim takes them.
func (s *Store) UpdateOp(ctx context.Context, op engine.Operation) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if op.State == engine.OpRunning && op.Epoch > 0 {
			var projectID string
			err := tx.QueryRow(ctx, `SELECT project_id FROM operations WHERE id = $1`, op.ID).Scan(&projectID)
			if errors.Is(err, pgx.ErrNoRows) {
				return engine.ErrNotFound
			}
			if err != nil {
				return err
			}
			if err := checkHold(ctx, tx, projectID, engine.Hold{OpID: op.ID, Epoch: op.Epoch}); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `UPDATE operations SET kind = $2, step = $3, state = $4, snapshot_id = $5,
				owner = $6, started_at = $7, updated_at = $8, finished_at = $9, error = $10
			WHERE id = $1 AND epoch = $11`,
			op.ID, string(op.Kind), op.Step, string(op.State), op.SnapshotID, op.Owner, op.StartedAt,
			op.UpdatedAt, op.FinishedAt, op.Error, op.Epoch)
		if err != nil || tag.RowsAffected() == 1 {
			return err
		}
		var epoch int64
		err = tx.QueryRow(ctx, `SELECT epoch FROM operations WHERE id = $1`, op.ID).Scan(&epoch)
		if errors.Is(err, pgx.ErrNoRows) {
			return engine.ErrNotFound
		}
		if err != nil {
			return err
		}
		return sqlstore.OpSuperseded(op, epoch)
	})
	if err != nil {
		return fmt.Errorf("update op %s: %w", op.ID, badInput(err))
	}
	return nil
}

// GetOp finds a journaled operation.
func (s *Store) GetOp(ctx context.Context, id string) (engine.Operation, error) {
	op, err := scanOp(s.pool.QueryRow(ctx, `SELECT `+opCols+` FROM operations WHERE id = $1`, id))
	return sqlstore.Found(op, badInput(err), pgx.ErrNoRows, "op", id)
}

// ListOps lists a project's operations, newest first; ties go to the later insert.
func (s *Store) ListOps(ctx context.Context, projectID string, limit int) ([]engine.Operation, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+opCols+` FROM operations WHERE project_id = $1
		ORDER BY started_at DESC, seq DESC`+limitClause(limit), projectID)
	if err != nil {
		return nil, fmt.Errorf("list ops of %s: %w", projectID, badInput(err))
	}
	ops, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Operation, error) { return scanOp(r) })
	if err != nil {
		return nil, fmt.Errorf("list ops of %s: %w", projectID, err)
	}
	return ops, nil
}

// TryLock takes or renews a named lock: one upsert that changes the row only when the lock is
// free, expired or already owner's. Racing upserts of one name queue on the row and re-check the
// condition against the winner's row, so one owner gets it.
//
// A session advisory lock would not do: it lives as long as one pooled connection, knows no
// expiry, and the engine renews and releases the lock from other goroutines (other connections).
func (s *Store) TryLock(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error) {
	return sqlstore.TryLock(name, owner, ttl, func() (bool, error) {
		tag, err := s.pool.Exec(ctx, `INSERT INTO locks (name, owner, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
			WHERE locks.owner = excluded.owner OR locks.expires_at <= $4`,
			name, owner, now.Add(ttl), now)
		return tag.RowsAffected() == 1, badInput(err)
	})
}

// Unlock releases owner's lock; a lock held by someone else (or nobody) is left alone.
func (s *Store) Unlock(ctx context.Context, name, owner string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM locks WHERE name = $1 AND owner = $2`, name, owner); err != nil {
		return fmt.Errorf("unlock %q for %s: %w", name, owner, badInput(err))
	}
	return nil
}

// LockHolder reads a lock's owner; an expired lock has none.
func (s *Store) LockHolder(ctx context.Context, name string, now time.Time) (string, error) {
	var owner string
	err := s.pool.QueryRow(ctx, `SELECT owner FROM locks WHERE name = $1 AND expires_at > $2`, name, now).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read lock %q: %w", name, badInput(err))
	}
	return owner, nil
}

// TakeOverLock moves the lock from a dead holder to owner, if from still holds it.
func (s *Store) TakeOverLock(ctx context.Context, name, from, owner string, now time.Time, ttl time.Duration) (bool, error) {
	return sqlstore.TakeOverLock(name, from, owner, ttl, func() (bool, error) {
		tag, err := s.pool.Exec(ctx, `UPDATE locks SET owner = $3, expires_at = $4 WHERE name = $1 AND owner = $2`,
			name, from, owner, now.Add(ttl))
		return tag.RowsAffected() == 1, badInput(err)
	})
}
