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

const snapshotCols = `id, project_id, owner, type, label, status, created_at, ready_at, deleted_at,
	size_bytes, sha256, location, backend, error, unpacked_bytes, parts, capacity_bytes`

func scanSnapshot(row pgx.Row) (engine.Snapshot, error) {
	var s engine.Snapshot
	var parts string
	err := row.Scan(&s.ID, &s.ProjectID, &s.Owner, &s.Type, &s.Label, &s.Status, &s.CreatedAt, &s.ReadyAt,
		&s.DeletedAt, &s.SizeBytes, &s.SHA256, &s.Location, &s.Backend, &s.Error, &s.UnpackedBytes, &parts, &s.CapacityBytes)
	if err != nil {
		return engine.Snapshot{}, err
	}
	if err := sqlstore.SetSnapshotParts(&s, parts); err != nil {
		return engine.Snapshot{}, err
	}
	s.CreatedAt, s.ReadyAt, s.DeletedAt = fromDB(s.CreatedAt), fromDB(s.ReadyAt), fromDB(s.DeletedAt)
	return s, nil
}

// InsertSnapshot adds a snapshot, refusing a manual one beyond maxManual (engine.MaxManualSnapshots
// when maxManual <= 0). A manual insert first locks its project's row, so concurrent manual
// inserts for one project count one after another and cannot both take the last slot.
func (s *Store) InsertSnapshot(ctx context.Context, snap engine.Snapshot, maxManual int, by engine.Hold) error {
	maxManual, err := sqlstore.NewSnapshot(snap, maxManual)
	if err != nil {
		return err
	}
	insert := func(ctx context.Context, db execer) error {
		_, err := db.Exec(ctx, `INSERT INTO snapshots (`+snapshotCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
			snap.ID, snap.ProjectID, snap.Owner, string(snap.Type), snap.Label, string(snap.Status),
			snap.CreatedAt, snap.ReadyAt, snap.DeletedAt, snap.SizeBytes, snap.SHA256, snap.Location,
			snap.Backend, snap.Error, snap.UnpackedBytes, sqlstore.SnapshotParts(snap), snap.CapacityBytes)
		return badInput(sqlstore.InsertRefused(err, isUnique(err), isForeignKey(err), "snapshot", snap.ProjectID))
	}
	if sqlstore.OnTimeline(snap) || by.OpID != "" {
		err = s.tx(ctx, func(tx pgx.Tx) error {
			if sqlstore.OnTimeline(snap) {
				// First, so its row lock is the stronger one this transaction takes.
				if err := checkTimeline(ctx, tx, snap.ProjectID, maxManual); err != nil {
					return err
				}
			}
			if err := checkHold(ctx, tx, snap.ProjectID, by); err != nil {
				return err
			}
			return insert(ctx, tx)
		})
	} else {
		// Engine snapshots are never refused: no lock, so they never wait on a manual insert.
		err = insert(ctx, s.pool)
	}
	if err != nil {
		return fmt.Errorf("insert snapshot %s of project %s: %w", snap.ID, snap.ProjectID, err)
	}
	return nil
}

// checkTimeline locks the project row and counts its manual snapshots. FOR NO KEY UPDATE
// serialises the manual inserts of one project without blocking the foreign-key checks of
// other inserts (snapshots, operations) that reference the project.
func checkTimeline(ctx context.Context, tx pgx.Tx, projectID string, maxManual int) error {
	var slug string
	err := tx.QueryRow(ctx, `SELECT slug FROM projects WHERE id = $1 FOR NO KEY UPDATE`, projectID).Scan(&slug)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("project %s: %w", projectID, engine.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("lock project: %w", badInput(err))
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM snapshots
		WHERE project_id = $1 AND type = 'manual' AND status <> 'deleted'`, projectID).Scan(&n); err != nil {
		return fmt.Errorf("count manual snapshots: %w", err)
	}
	return sqlstore.TimelineFull(slug, n, maxManual)
}

// UpdateSnapshot replaces the stored fields of s.ID; the project it belongs to never changes.
func (s *Store) UpdateSnapshot(ctx context.Context, snap engine.Snapshot, by engine.Hold) error {
	update := func(ctx context.Context, db execer) error {
		q := `UPDATE snapshots SET owner = $2, type = $3, label = $4, status = $5,
			created_at = $6, ready_at = $7, deleted_at = $8, size_bytes = $9, sha256 = $10, location = $11,
			backend = $12, error = $13, unpacked_bytes = $14, parts = $15, capacity_bytes = $16
		WHERE id = $1`
		args := []any{snap.ID, snap.Owner, string(snap.Type), snap.Label, string(snap.Status), snap.CreatedAt,
			snap.ReadyAt, snap.DeletedAt, snap.SizeBytes, snap.SHA256, snap.Location, snap.Backend, snap.Error, snap.UnpackedBytes,
			sqlstore.SnapshotParts(snap), snap.CapacityBytes}
		if by.OpID != "" {
			// The fence is the project the row belongs to, whatever the caller says it is.
			q += ` AND project_id = $17`
			args = append(args, snap.ProjectID)
		}
		tag, err := db.Exec(ctx, q, args...)
		if err == nil && tag.RowsAffected() == 0 {
			err = engine.ErrNotFound
		}
		return err
	}
	var err error
	if by.OpID != "" {
		err = s.tx(ctx, func(tx pgx.Tx) error {
			if err := checkHold(ctx, tx, snap.ProjectID, by); err != nil {
				return err
			}
			return update(ctx, tx)
		})
	} else {
		err = update(ctx, s.pool)
	}
	if err != nil {
		return fmt.Errorf("update snapshot %s: %w", snap.ID, badInput(err))
	}
	return nil
}

// UndeleteSnapshot implements engine.Store: in one transaction the snapshot row is locked and
// read, a manual one's project is locked and its timeline counted (as InsertSnapshot does), and
// the snapshot comes back.
func (s *Store) UndeleteSnapshot(ctx context.Context, id string, deletedAfter time.Time, maxManual int) (engine.Snapshot, error) {
	if maxManual <= 0 {
		maxManual = engine.MaxManualSnapshots
	}
	var snap engine.Snapshot
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		snap, err = scanSnapshot(tx.QueryRow(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE id = $1`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return engine.ErrNotFound
		}
		if err != nil {
			return badInput(err)
		}
		if err := sqlstore.Undeletable(snap, deletedAfter); err != nil {
			return err
		}
		if snap.Type == engine.SnapshotManual {
			// The project row first, as InsertSnapshot takes it: two undeletes (or an undelete
			// and a new manual snapshot) of one project are serialised on it.
			if err := checkTimeline(ctx, tx, snap.ProjectID, maxManual); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `UPDATE snapshots SET status = $2, deleted_at = $3
			WHERE id = $1 AND status = $4 AND error = '' AND deleted_at > $5`,
			id, string(engine.SnapshotReady), time.Time{}, string(engine.SnapshotDeleted), deletedAfter)
		if err != nil {
			return badInput(err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: snapshot %s changed meanwhile", engine.ErrConflict, id)
		}
		return nil
	})
	if err != nil {
		return engine.Snapshot{}, fmt.Errorf("undelete snapshot %s: %w", id, err)
	}
	snap.Status, snap.DeletedAt = engine.SnapshotReady, time.Time{}
	return snap, nil
}

// GetSnapshot finds a snapshot by id, deleted or not.
func (s *Store) GetSnapshot(ctx context.Context, id string) (engine.Snapshot, error) {
	snap, err := scanSnapshot(s.pool.QueryRow(ctx, `SELECT `+snapshotCols+` FROM snapshots WHERE id = $1`, id))
	return sqlstore.Found(snap, badInput(err), pgx.ErrNoRows, "snapshot", id)
}

// ListSnapshots lists snapshots oldest first. OnlyDeletedBefore lists soft-deleted snapshots
// whatever IncludeDeleted says.
func (s *Store) ListSnapshots(ctx context.Context, f engine.SnapshotFilter) ([]engine.Snapshot, error) {
	q := `SELECT ` + snapshotCols + ` FROM snapshots WHERE true`
	var args params
	if f.ProjectID != "" {
		q += ` AND project_id = ` + args.add(f.ProjectID)
	}
	if len(f.Types) > 0 {
		q += ` AND type = ANY(` + args.add(strs(f.Types)) + `)`
	}
	switch {
	case !f.OnlyDeletedBefore.IsZero():
		q += ` AND status = 'deleted' AND deleted_at < ` + args.add(f.OnlyDeletedBefore)
	case !f.IncludeDeleted:
		q += ` AND status <> 'deleted'`
	}
	q += ` ORDER BY created_at, id`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", badInput(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Snapshot, error) { return scanSnapshot(r) })
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	return out, nil
}

// DeleteSnapshotRecord forgets a snapshot for good.
func (s *Store) DeleteSnapshotRecord(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM snapshots WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = engine.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete snapshot record %s: %w", id, badInput(err))
	}
	return nil
}
