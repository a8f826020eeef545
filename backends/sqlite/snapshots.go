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

const snapshotCols = `id, project_id, owner, type, label, status, created_at, ready_at, deleted_at,
	size_bytes, sha256, location, backend, error, unpacked_bytes, parts, capacity_bytes`

func scanSnapshot(sc scanner) (engine.Snapshot, error) {
	var s engine.Snapshot
	var created, ready, deleted int64
	var parts string
	err := sc.Scan(&s.ID, &s.ProjectID, &s.Owner, &s.Type, &s.Label, &s.Status, &created, &ready, &deleted,
		&s.SizeBytes, &s.SHA256, &s.Location, &s.Backend, &s.Error, &s.UnpackedBytes, &parts, &s.CapacityBytes)
	if err != nil {
		return engine.Snapshot{}, err
	}
	if err := sqlstore.SetSnapshotParts(&s, parts); err != nil {
		return engine.Snapshot{}, err
	}
	s.CreatedAt, s.ReadyAt, s.DeletedAt = fromMicros(created), fromMicros(ready), fromMicros(deleted)
	return s, nil
}

// InsertSnapshot adds a snapshot, refusing a manual one beyond maxManual (engine.MaxManualSnapshots
// when maxManual <= 0). The count and the insert share one write transaction, which SQLite runs
// one at a time, so concurrent inserts cannot both take the last slot.
func (s *Store) InsertSnapshot(ctx context.Context, snap engine.Snapshot, maxManual int, by engine.Hold) error {
	maxManual, err := sqlstore.NewSnapshot(snap, maxManual)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if err := checkHold(ctx, tx, snap.ProjectID, by); err != nil {
			return err
		}
		if sqlstore.OnTimeline(snap) {
			if err := checkTimeline(ctx, tx, snap.ProjectID, maxManual); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO snapshots (`+snapshotCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			snap.ID, snap.ProjectID, snap.Owner, string(snap.Type), snap.Label, string(snap.Status),
			toMicros(snap.CreatedAt), toMicros(snap.ReadyAt), toMicros(snap.DeletedAt), snap.SizeBytes,
			snap.SHA256, snap.Location, snap.Backend, snap.Error, snap.UnpackedBytes, sqlstore.SnapshotParts(snap), snap.CapacityBytes)
		return sqlstore.InsertRefused(err, isUnique(err), isForeignKey(err), "snapshot", snap.ProjectID)
	})
	if err != nil {
		return fmt.Errorf("insert snapshot %s of project %s: %w", snap.ID, snap.ProjectID, err)
	}
	return nil
}

func checkTimeline(ctx context.Context, tx *sql.Tx, projectID string, maxManual int) error {
	var slug string
	err := tx.QueryRowContext(ctx, `SELECT slug FROM projects WHERE id = ?`, projectID).Scan(&slug)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("project %s: %w", projectID, engine.ErrNotFound)
	}
	if err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM snapshots
		WHERE project_id = ? AND type = 'manual' AND status <> 'deleted'`, projectID).Scan(&n); err != nil {
		return err
	}
	return sqlstore.TimelineFull(slug, n, maxManual)
}

// UpdateSnapshot replaces the stored fields of s.ID; the project it belongs to never changes.
func (s *Store) UpdateSnapshot(ctx context.Context, snap engine.Snapshot, by engine.Hold) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		q := `UPDATE snapshots SET owner = ?, type = ?, label = ?, status = ?,
				created_at = ?, ready_at = ?, deleted_at = ?, size_bytes = ?, sha256 = ?, location = ?,
				backend = ?, error = ?, unpacked_bytes = ?, parts = ?, capacity_bytes = ?
			WHERE id = ?`
		args := []any{snap.Owner, string(snap.Type), snap.Label, string(snap.Status), toMicros(snap.CreatedAt),
			toMicros(snap.ReadyAt), toMicros(snap.DeletedAt), snap.SizeBytes, snap.SHA256, snap.Location,
			snap.Backend, snap.Error, snap.UnpackedBytes, sqlstore.SnapshotParts(snap), snap.CapacityBytes, snap.ID}
		if by.OpID != "" {
			// The fence is the project the row belongs to, whatever the caller says it is.
			if err := checkHold(ctx, tx, snap.ProjectID, by); err != nil {
				return err
			}
			q += ` AND project_id = ?`
			args = append(args, snap.ProjectID)
		}
		res, err := tx.ExecContext(ctx, q, args...)
		return mustAffect(res, err, engine.ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("update snapshot %s: %w", snap.ID, err)
	}
	return nil
}

// UndeleteSnapshot implements engine.Store: one write transaction reads the snapshot, counts
// the timeline when it is manual, and brings it back.
func (s *Store) UndeleteSnapshot(ctx context.Context, id string, deletedAfter time.Time, maxManual int) (engine.Snapshot, error) {
	if maxManual <= 0 {
		maxManual = engine.MaxManualSnapshots
	}
	var snap engine.Snapshot
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		snap, err = scanSnapshot(tx.QueryRowContext(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return engine.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := sqlstore.Undeletable(snap, deletedAfter); err != nil {
			return err
		}
		if snap.Type == engine.SnapshotManual {
			if err := checkTimeline(ctx, tx, snap.ProjectID, maxManual); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE snapshots SET status = ?, deleted_at = ?
			WHERE id = ? AND status = ? AND error = '' AND deleted_at > ?`,
			string(engine.SnapshotReady), toMicros(time.Time{}), id, string(engine.SnapshotDeleted), toMicros(deletedAfter))
		return mustAffect(res, err, engine.ErrConflict)
	})
	if err != nil {
		return engine.Snapshot{}, fmt.Errorf("undelete snapshot %s: %w", id, err)
	}
	snap.Status, snap.DeletedAt = engine.SnapshotReady, time.Time{}
	return snap, nil
}

// GetSnapshot finds a snapshot by id, deleted or not.
func (s *Store) GetSnapshot(ctx context.Context, id string) (engine.Snapshot, error) {
	snap, err := scanSnapshot(s.db.QueryRowContext(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE id = ?`, id))
	return sqlstore.Found(snap, err, sql.ErrNoRows, "snapshot", id)
}

// ListSnapshots lists snapshots oldest first. OnlyDeletedBefore lists soft-deleted snapshots
// whatever IncludeDeleted says.
func (s *Store) ListSnapshots(ctx context.Context, f engine.SnapshotFilter) ([]engine.Snapshot, error) {
	q := `SELECT ` + snapshotCols + ` FROM snapshots WHERE 1 = 1`
	var args []any
	if f.ProjectID != "" {
		q += ` AND project_id = ?`
		args = append(args, f.ProjectID)
	}
	if len(f.Types) > 0 {
		q += ` AND type IN (` + placeholders(len(f.Types)) + `)`
		for _, t := range f.Types {
			args = append(args, string(t))
		}
	}
	switch {
	case !f.OnlyDeletedBefore.IsZero():
		q += ` AND status = 'deleted' AND deleted_at < ?`
		args = append(args, toMicros(f.OnlyDeletedBefore))
	case !f.IncludeDeleted:
		q += ` AND status <> 'deleted'`
	}
	q += ` ORDER BY created_at, id`

	out, err := queryAll(ctx, s.db, scanSnapshot, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	return out, nil
}

// DeleteSnapshotRecord forgets a snapshot for good.
func (s *Store) DeleteSnapshotRecord(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM snapshots WHERE id = ?`, id)
		return mustAffect(res, err, engine.ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("delete snapshot record %s: %w", id, err)
	}
	return nil
}
