package sqlite

// The holds on a project: the exclusive one of an operation (a claim, its heartbeat and its
// release) and the shared uses of file operations and execs, which begin only while no
// exclusive operation holds the project (invariant 9), so both read the same hold columns.

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
			op_id = ?, op_kind = ?, op_owner = ?, op_heartbeat = ?, updated_at = ?,
			op_epoch = op_epoch + 1
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
	if !c.KeptAliveAt.IsZero() {
		q += ` AND keep_alive_until <= ?`
		args = append(args, toMicros(c.KeptAliveAt))
	}
	var p engine.Project
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		p, err = scanProject(tx.QueryRowContext(ctx, q+` RETURNING `+projectCols, args...))
		if err != nil || c.TakeOver == "" {
			return explainUpdate(ctx, tx, projectID, err)
		}
		// The journal entry changes hands with the hold: the stale holder's next write to it
		// is refused (UpdateOp compares epochs).
		_, err = tx.ExecContext(ctx, `UPDATE operations SET epoch = ? WHERE id = ? AND project_id = ?`, p.OpEpoch, c.TakeOver, projectID)
		return err
	})
	if err != nil {
		return engine.Project{}, fmt.Errorf("claim project %s for %s %s: %w", projectID, c.Kind, c.OpID, err)
	}
	return p, nil
}

// whyNotHeld explains a conditional update that matched nothing: the project is missing
// (ErrNotFound) or not in the expected state (ErrConflict, with what it is instead).
func whyNotHeld(ctx context.Context, tx *sql.Tx, projectID string) error {
	p, err := readProject(ctx, tx, projectID)
	if err != nil {
		return err
	}
	return sqlstore.NotHeld(p)
}

// readProject reads a project inside tx; ErrNotFound when there is none.
func readProject(ctx context.Context, tx *sql.Tx, projectID string) (engine.Project, error) {
	p, err := scanProject(tx.QueryRowContext(ctx, `SELECT `+projectCols+` FROM projects WHERE id = ?`, projectID))
	if errors.Is(err, sql.ErrNoRows) {
		return p, engine.ErrNotFound
	}
	return p, err
}

// checkHold is the fenced read of a write by h inside tx: nil while h holds projectID at its
// epoch (or h is zero), else ErrSuperseded. SQLite runs one write transaction at a time, so
// what it read still holds when the transaction's write commits.
func checkHold(ctx context.Context, tx *sql.Tx, projectID string, h engine.Hold) error {
	if h.OpID == "" {
		return nil
	}
	p, err := readProject(ctx, tx, projectID)
	if err != nil {
		return err
	}
	return sqlstore.CheckHold(p, h)
}

// updateFenced runs q, an UPDATE ... RETURNING projectCols of one project that matches only
// while h holds it (its conditions end with op_id = ? AND op_epoch = ?, given last), and says
// ErrSuperseded when it did not match.
func (s *Store) updateFenced(ctx context.Context, projectID string, h engine.Hold, q string, args ...any) (engine.Project, error) {
	var p engine.Project
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		p, err = scanProject(tx.QueryRowContext(ctx, q+` AND op_id = ? AND op_id <> '' AND op_epoch = ? RETURNING `+projectCols,
			append(args, h.OpID, h.Epoch)...))
		if errors.Is(err, sql.ErrNoRows) {
			cur, rerr := readProject(ctx, tx, projectID)
			if rerr != nil {
				return rerr
			}
			return sqlstore.Superseded(cur, h)
		}
		return explainUpdate(ctx, tx, projectID, err)
	})
	return p, err
}

// Heartbeat refreshes the holder's heartbeat.
func (s *Store) Heartbeat(ctx context.Context, projectID string, h engine.Hold, at time.Time) error {
	_, err := s.updateFenced(ctx, projectID, h, `UPDATE projects SET op_heartbeat = ? WHERE id = ?`, toMicros(at), projectID)
	if err != nil {
		return fmt.Errorf("heartbeat project %s for op %s: %w", projectID, h.OpID, err)
	}
	return nil
}

// errNoRow marks an update that matched nothing, before it is explained.
var errNoRow = errors.New("no row matched")

// SetProjectStatus moves a held project to another status, keeping the hold.
func (s *Store) SetProjectStatus(ctx context.Context, projectID string, h engine.Hold, to engine.ProjectStatus, reason string, at time.Time) (engine.Project, error) {
	p, err := s.updateFenced(ctx, projectID, h, `UPDATE projects SET status = ?, status_reason = ?, updated_at = ?
		WHERE id = ?`, string(to), reason, toMicros(at), projectID)
	if err != nil {
		return engine.Project{}, fmt.Errorf("set project %s status %s for op %s: %w", projectID, to, h.OpID, err)
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
	q += ` WHERE id = ?`
	args = append(args, projectID)

	p, err := s.updateFenced(ctx, projectID, engine.Hold{OpID: r.OpID, Epoch: r.Epoch}, q, args...)
	if err != nil {
		return engine.Project{}, fmt.Errorf("release project %s from op %s: %w", projectID, r.OpID, err)
	}
	return p, nil
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

const useCols = `id, project_id, kind, owner, started_at, heartbeat, revoked`

func scanUse(sc scanner) (engine.Use, error) {
	var u engine.Use
	var started, beat int64
	if err := sc.Scan(&u.ID, &u.ProjectID, &u.Kind, &u.Owner, &started, &beat, &u.Revoked); err != nil {
		return engine.Use{}, err
	}
	u.StartedAt, u.Heartbeat = fromMicros(started), fromMicros(beat)
	return u, nil
}

// BeginUse is a conditional UPDATE of the project (the touch) and the insert, in one write
// transaction: SQLite serialises it with every claim, so a claim either sees the use or
// comes first and the use is refused.
func (s *Store) BeginUse(ctx context.Context, u engine.Use, exclusive []engine.OpKind) error {
	if err := sqlstore.NewUse(u); err != nil {
		return err
	}
	q := `UPDATE projects SET ` + touchSet + ` WHERE id = ? AND status = ?`
	args := append(touchArgs(engine.Activity{At: u.StartedAt, Source: u.Source, Actor: u.Owner}), u.ProjectID, string(engine.StatusActive))
	if len(exclusive) > 0 {
		q += ` AND (op_id = '' OR op_kind NOT IN (` + placeholders(len(exclusive)) + `))`
		for _, k := range exclusive {
			args = append(args, string(k))
		}
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err := mustAffect(res, err, errNoRow); errors.Is(err, errNoRow) {
			return whyNotHeld(ctx, tx, u.ProjectID)
		} else if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO project_uses (`+useCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			u.ID, u.ProjectID, u.Kind, u.Owner, toMicros(u.StartedAt), toMicros(u.Heartbeat), u.Revoked)
		if isUnique(err) {
			return fmt.Errorf("%w: use id is in use", engine.ErrExists)
		}
		if err != nil {
			return err
		}
		return recordActivity(ctx, tx, u.ProjectID, engine.Activity{At: u.StartedAt, Source: u.Source, Actor: u.Owner}, 1)
	})
	if err != nil {
		return fmt.Errorf("begin %s use of project %s: %w", u.Kind, u.ProjectID, err)
	}
	return nil
}

// EndUse deletes the use and records the activity in one transaction.
func (s *Store) EndUse(ctx context.Context, projectID, useID string, touch engine.Activity) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM project_uses WHERE id = ? AND project_id = ?`, useID, projectID)
		if err := mustAffect(res, err, engine.ErrNotFound); err != nil {
			return err
		}
		if touch.At.IsZero() {
			return nil
		}
		if _, err = tx.ExecContext(ctx, `UPDATE projects SET `+touchSet+` WHERE id = ?`, append(touchArgs(touch), projectID)...); err != nil {
			return err
		}
		return recordActivity(ctx, tx, projectID, touch, 0)
	})
	if err != nil {
		return fmt.Errorf("end use %s of project %s: %w", useID, projectID, err)
	}
	return nil
}

// GetUse reads one use.
func (s *Store) GetUse(ctx context.Context, useID string) (engine.Use, error) {
	u, err := scanUse(s.db.QueryRowContext(ctx, `SELECT `+useCols+` FROM project_uses WHERE id = ?`, useID))
	if errors.Is(err, sql.ErrNoRows) {
		err = engine.ErrNotFound
	}
	if err != nil {
		return engine.Use{}, fmt.Errorf("get use %s: %w", useID, err)
	}
	return u, nil
}

// HeartbeatUse refreshes a use's heartbeat.
func (s *Store) HeartbeatUse(ctx context.Context, useID string, at time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE project_uses SET heartbeat = ? WHERE id = ?`, toMicros(at), useID)
		return mustAffect(res, err, engine.ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("heartbeat use %s: %w", useID, err)
	}
	return nil
}

// RevokeUse records the reason a use is asked to stop.
func (s *Store) RevokeUse(ctx context.Context, useID, reason string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE project_uses SET revoked = ? WHERE id = ?`, reason, useID)
		return mustAffect(res, err, engine.ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("revoke use %s: %w", useID, err)
	}
	return nil
}

// ListUses lists a project's uses, oldest first.
func (s *Store) ListUses(ctx context.Context, projectID string) ([]engine.Use, error) {
	out, err := queryAll(ctx, s.db, scanUse, `SELECT `+useCols+` FROM project_uses WHERE project_id = ? ORDER BY started_at, id`, projectID)
	if err != nil {
		return nil, fmt.Errorf("list uses of project %s: %w", projectID, err)
	}
	return out, nil
}
