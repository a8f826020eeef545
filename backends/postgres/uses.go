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

const useCols = `id, project_id, kind, owner, started_at, heartbeat, revoked`

func scanUse(row pgx.Row) (engine.Use, error) {
	var u engine.Use
	if err := row.Scan(&u.ID, &u.ProjectID, &u.Kind, &u.Owner, &u.StartedAt, &u.Heartbeat, &u.Revoked); err != nil {
		return engine.Use{}, err
	}
	u.StartedAt, u.Heartbeat = u.StartedAt.UTC(), u.Heartbeat.UTC()
	return u, nil
}

// beginUseQuery touches the project only if a use may begin, and inserts the use from the row
// it updated, in one statement. The UPDATE takes the project's row lock: a racing claim either
// committed first (then the re-checked WHERE fails and no use is inserted) or waits until this
// statement's use is committed and visible to the claimer's wait.
const beginUseQuery = `WITH touched AS (
		UPDATE projects SET last_activity = GREATEST(last_activity, $5)
		WHERE id = $2 AND status = 'active' AND (op_id = '' OR NOT (op_kind = ANY($8::text[])))
		RETURNING id)
	INSERT INTO project_uses (` + useCols + `)
	SELECT $1, id, $3, $4, $5, $6, $7 FROM touched
	RETURNING id`

// BeginUse records a use of an active project not held by an exclusive operation.
func (s *Store) BeginUse(ctx context.Context, u engine.Use, exclusive []engine.OpKind) error {
	if err := sqlstore.NewUse(u); err != nil {
		return err
	}
	kinds := make([]string, len(exclusive))
	for i, k := range exclusive {
		kinds[i] = string(k)
	}
	var id string
	err := s.pool.QueryRow(ctx, beginUseQuery, u.ID, u.ProjectID, u.Kind, u.Owner, u.StartedAt, u.Heartbeat, u.Revoked, kinds).Scan(&id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		err = s.whyNotHeld(ctx, u.ProjectID)
	case isUnique(err):
		err = fmt.Errorf("%w: use id is in use", engine.ErrExists)
	default:
		err = badInput(err)
	}
	if err != nil {
		return fmt.Errorf("begin %s use of project %s: %w", u.Kind, u.ProjectID, err)
	}
	return nil
}

// endUseQuery deletes the use and, when $3 is set, records the activity, in one statement.
const endUseQuery = `WITH gone AS (
		DELETE FROM project_uses WHERE id = $1 AND project_id = $2 RETURNING project_id),
	touched AS (
		UPDATE projects SET last_activity = GREATEST(last_activity, $3)
		WHERE $4::boolean AND id IN (SELECT project_id FROM gone))
	SELECT count(*) FROM gone`

// EndUse forgets a use; ErrNotFound when it was already gone.
func (s *Store) EndUse(ctx context.Context, projectID, useID string, touch time.Time) error {
	var n int
	err := s.pool.QueryRow(ctx, endUseQuery, useID, projectID, touch, !touch.IsZero()).Scan(&n)
	if err == nil && n == 0 {
		err = engine.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("end use %s of project %s: %w", useID, projectID, err)
	}
	return nil
}

// GetUse reads one use.
func (s *Store) GetUse(ctx context.Context, useID string) (engine.Use, error) {
	u, err := scanUse(s.pool.QueryRow(ctx, `SELECT `+useCols+` FROM project_uses WHERE id = $1`, useID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = engine.ErrNotFound
	}
	if err != nil {
		return engine.Use{}, fmt.Errorf("get use %s: %w", useID, err)
	}
	return u, nil
}

// HeartbeatUse refreshes a use's heartbeat.
func (s *Store) HeartbeatUse(ctx context.Context, useID string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE project_uses SET heartbeat = $2 WHERE id = $1`, useID, at)
	if err == nil && tag.RowsAffected() == 0 {
		err = engine.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("heartbeat use %s: %w", useID, err)
	}
	return nil
}

// RevokeUse records the reason a use is asked to stop.
func (s *Store) RevokeUse(ctx context.Context, useID, reason string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE project_uses SET revoked = $2 WHERE id = $1`, useID, reason)
	if err == nil && tag.RowsAffected() == 0 {
		err = engine.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("revoke use %s: %w", useID, badInput(err))
	}
	return nil
}

// ListUses lists a project's uses, oldest first.
func (s *Store) ListUses(ctx context.Context, projectID string) ([]engine.Use, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+useCols+` FROM project_uses WHERE project_id = $1 ORDER BY started_at, id`, projectID)
	if err != nil {
		return nil, fmt.Errorf("list uses of project %s: %w", projectID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Use, error) { return scanUse(r) })
	if err != nil {
		return nil, fmt.Errorf("list uses of project %s: %w", projectID, err)
	}
	return out, nil
}
