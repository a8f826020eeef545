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

// ClaimProject is one conditional UPDATE in a write transaction: the project changes hands only
// if every condition of c still holds, so of several racing claims exactly one wins.
func (s *Store) ClaimProject(ctx context.Context, projectID string, c engine.Claim) (engine.Project, error) {
	if c.OpID == "" || len(c.From) == 0 {
		return engine.Project{}, fmt.Errorf("claim project %s: %w: op id and from statuses are required", projectID, engine.ErrBadInput)
	}
	// An empty To keeps the status (an operation that needs the project but not a new state).
	// A new status clears the reason, which explained the old one.
	q := `UPDATE projects SET
			status = CASE WHEN ? = '' THEN status ELSE ? END,
			status_reason = CASE WHEN ? = '' THEN status_reason ELSE '' END,
			op_id = ?, op_kind = ?, op_owner = ?, op_heartbeat = ?, updated_at = ?
		WHERE id = ? AND status IN (` + placeholders(len(c.From)) + `)`
	to := string(c.To)
	args := []any{to, to, to, c.OpID, string(c.Kind), c.Owner, toMicros(c.Now), toMicros(c.Now), projectID}
	for _, st := range c.From {
		args = append(args, string(st))
	}
	if c.TakeOver != "" {
		// The stale holder may have released meanwhile; then the project is free and still ours.
		q += ` AND op_id IN ('', ?)`
		args = append(args, c.TakeOver)
	} else {
		q += ` AND op_id = ''`
	}
	if !c.IdleBefore.IsZero() {
		q += ` AND last_activity <= ?`
		args = append(args, toMicros(c.IdleBefore))
	}
	p, err := s.updateHeld(ctx, projectID, q+` RETURNING `+projectCols, args...)
	if err != nil {
		return engine.Project{}, fmt.Errorf("claim project %s for %s %s: %w", projectID, c.Kind, c.OpID, err)
	}
	return p, nil
}

// whyNotHeld explains a conditional update that matched nothing: the project is missing
// (ErrNotFound) or not in the expected state (ErrConflict, with what it is instead).
func whyNotHeld(ctx context.Context, tx *sql.Tx, projectID string) error {
	p, err := scanProject(tx.QueryRowContext(ctx, `SELECT `+projectCols+` FROM projects WHERE id = ?`, projectID))
	if errors.Is(err, sql.ErrNoRows) {
		return engine.ErrNotFound
	}
	if err != nil {
		return err
	}
	return sqlstore.NotHeld(p)
}

// Heartbeat refreshes the holder's heartbeat.
func (s *Store) Heartbeat(ctx context.Context, projectID, opID string, at time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE projects SET op_heartbeat = ? WHERE id = ? AND op_id = ? AND op_id <> ''`,
			toMicros(at), projectID, opID)
		err = mustAffect(res, err, errNoRow)
		if errors.Is(err, errNoRow) {
			return whyNotHeld(ctx, tx, projectID)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("heartbeat project %s for op %s: %w", projectID, opID, err)
	}
	return nil
}

// errNoRow marks an update that matched nothing, before it is explained.
var errNoRow = errors.New("no row matched")

// SetProjectStatus moves a held project to another status, keeping the hold.
func (s *Store) SetProjectStatus(ctx context.Context, projectID, opID string, to engine.ProjectStatus, reason string, at time.Time) (engine.Project, error) {
	p, err := s.updateHeld(ctx, projectID, `UPDATE projects SET status = ?, status_reason = ?, updated_at = ?
		WHERE id = ? AND op_id = ? AND op_id <> ''
		RETURNING `+projectCols, string(to), reason, toMicros(at), projectID, opID)
	if err != nil {
		return engine.Project{}, fmt.Errorf("set project %s status %s for op %s: %w", projectID, to, opID, err)
	}
	return p, nil
}

// ReleaseProject ends the hold of r.OpID. An empty r.To keeps the status.
func (s *Store) ReleaseProject(ctx context.Context, projectID string, r engine.Release) (engine.Project, error) {
	q := `UPDATE projects SET
			status = CASE WHEN ? = '' THEN status ELSE ? END,
			status_reason = ?, updated_at = ?,
			op_id = '', op_kind = '', op_owner = '', op_heartbeat = ?`
	args := []any{string(r.To), string(r.To), r.Reason, toMicros(r.Now), zeroMicros}
	if r.SetHibernationSnapshot {
		q += `, hibernation_snapshot = ?`
		args = append(args, r.HibernationSnapshot)
	}
	q += ` WHERE id = ? AND op_id = ? AND op_id <> '' RETURNING ` + projectCols
	args = append(args, projectID, r.OpID)

	p, err := s.updateHeld(ctx, projectID, q, args...)
	if err != nil {
		return engine.Project{}, fmt.Errorf("release project %s from op %s: %w", projectID, r.OpID, err)
	}
	return p, nil
}

// updateHeld runs q, an UPDATE ... RETURNING projectCols of one project that matches only
// while its conditions (status, holder) still hold, in one write transaction, and explains a
// miss (whyNotHeld) inside that transaction, so the explanation is of the state that refused.
func (s *Store) updateHeld(ctx context.Context, projectID, q string, args ...any) (engine.Project, error) {
	var p engine.Project
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		p, err = scanProject(tx.QueryRowContext(ctx, q, args...))
		return explainUpdate(ctx, tx, projectID, err)
	})
	return p, err
}

// explainUpdate maps the error of an UPDATE ... RETURNING on a held project.
func explainUpdate(ctx context.Context, tx *sql.Tx, projectID string, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return whyNotHeld(ctx, tx, projectID)
	case isUnique(err):
		// Leaving the deleted status while another live project took the slug.
		return fmt.Errorf("%w: slug is in use by a live project", engine.ErrExists)
	}
	return err
}
