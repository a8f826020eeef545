package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sailtui/sailtui/backends/internal/sqlstore"
	"github.com/sailtui/sailtui/engine"
)

const opCols = `id, project_id, kind, step, state, snapshot_id, owner, started_at, updated_at, finished_at, error, epoch`

func scanOp(sc scanner) (engine.Operation, error) {
	var op engine.Operation
	var started, updated, finished int64
	err := sc.Scan(&op.ID, &op.ProjectID, &op.Kind, &op.Step, &op.State, &op.SnapshotID, &op.Owner,
		&started, &updated, &finished, &op.Error, &op.Epoch)
	if err != nil {
		return engine.Operation{}, err
	}
	op.StartedAt, op.UpdatedAt, op.FinishedAt = fromMicros(started), fromMicros(updated), fromMicros(finished)
	return op, nil
}

// InsertOp journals a new operation.
func (s *Store) InsertOp(ctx context.Context, op engine.Operation) error {
	if op.ID == "" {
		return fmt.Errorf("insert op: %w: id is required", engine.ErrBadInput)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if op.State == engine.OpRunning && op.Epoch > 0 {
			if err := checkHold(ctx, tx, op.ProjectID, engine.Hold{OpID: op.ID, Epoch: op.Epoch}); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO operations (`+opCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			op.ID, op.ProjectID, string(op.Kind), op.Step, string(op.State), op.SnapshotID, op.Owner,
			toMicros(op.StartedAt), toMicros(op.UpdatedAt), toMicros(op.FinishedAt), op.Error, op.Epoch)
		return sqlstore.InsertRefused(err, isUnique(err), isForeignKey(err), "op", op.ProjectID)
	})
	if err != nil {
		return fmt.Errorf("insert %s op %s of project %s: %w", op.Kind, op.ID, op.ProjectID, err)
	}
	return nil
}

// UpdateOp replaces the stored fields of op.ID while the entry is at op.Epoch (and, for a running
// entry, the project is held by it at that epoch); the project it belongs to never changes.
func (s *Store) UpdateOp(ctx context.Context, op engine.Operation) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var projectID string
		var epoch int64
		err := tx.QueryRowContext(ctx, `SELECT project_id, epoch FROM operations WHERE id = ?`, op.ID).Scan(&projectID, &epoch)
		if errors.Is(err, sql.ErrNoRows) {
			return engine.ErrNotFound
		}
		if err != nil {
			return err
		}
		if epoch != op.Epoch {
			return sqlstore.OpSuperseded(op, epoch)
		}
		if op.State == engine.OpRunning && op.Epoch > 0 {
			if err := checkHold(ctx, tx, projectID, engine.Hold{OpID: op.ID, Epoch: op.Epoch}); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE operations SET kind = ?, step = ?, state = ?, snapshot_id = ?,
				owner = ?, started_at = ?, updated_at = ?, finished_at = ?, error = ?
			WHERE id = ?`,
			string(op.Kind), op.Step, string(op.State), op.SnapshotID, op.Owner, toMicros(op.StartedAt),
			toMicros(op.UpdatedAt), toMicros(op.FinishedAt), op.Error, op.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("update op %s: %w", op.ID, err)
	}
	return nil
}

// GetOp finds a journaled operation.
func (s *Store) GetOp(ctx context.Context, id string) (engine.Operation, error) {
	op, err := scanOp(s.db.QueryRowContext(ctx, `SELECT `+opCols+` FROM operations WHERE id = ?`, id))
	return sqlstore.Found(op, err, sql.ErrNoRows, "op", id)
}

// ListOps lists a project's operations, newest first; ties go to the later insert.
func (s *Store) ListOps(ctx context.Context, projectID string, limit int) ([]engine.Operation, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	ops, err := queryAll(ctx, s.db, scanOp, `SELECT `+opCols+` FROM operations WHERE project_id = ?
		ORDER BY started_at DESC, rowid DESC LIMIT ?`, projectID, limit)
	if err != nil {
		return nil, fmt.Errorf("list ops of %s: %w", projectID, err)
	}
	return ops, nil
}

// TryLock takes or renews a named lock: one upsert that changes the row only when the lock is
// free, expired or already owner's.
func (s *Store) TryLock(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error) {
	return sqlstore.TryLock(name, owner, ttl, func() (ok bool, err error) {
		err = s.write(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `INSERT INTO locks (name, owner, expires_at) VALUES (?, ?, ?)
				ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
				WHERE locks.owner = excluded.owner OR locks.expires_at <= ?`,
				name, owner, toMicros(now.Add(ttl)), toMicros(now))
			ok, err = changedOne(res, err)
			return err
		})
		return ok, err
	})
}

// Unlock releases owner's lock; a lock held by someone else (or nobody) is left alone.
func (s *Store) Unlock(ctx context.Context, name, owner string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE name = ? AND owner = ?`, name, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("unlock %q for %s: %w", name, owner, err)
	}
	return nil
}

// LockHolder reads a lock's owner; an expired lock has none.
func (s *Store) LockHolder(ctx context.Context, name string, now time.Time) (string, error) {
	var owner string
	err := s.db.QueryRowContext(ctx, `SELECT owner FROM locks WHERE name = ? AND expires_at > ?`, name, toMicros(now)).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read lock %q: %w", name, err)
	}
	return owner, nil
}

// TakeOverLock moves the lock from a dead holder to owner, if from still holds it.
func (s *Store) TakeOverLock(ctx context.Context, name, from, owner string, now time.Time, ttl time.Duration) (bool, error) {
	return sqlstore.TakeOverLock(name, from, owner, ttl, func() (ok bool, err error) {
		err = s.write(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `UPDATE locks SET owner = ?, expires_at = ? WHERE name = ? AND owner = ?`,
				owner, toMicros(now.Add(ttl)), name, from)
			ok, err = changedOne(res, err)
			return err
		})
		return ok, err
	})
}
