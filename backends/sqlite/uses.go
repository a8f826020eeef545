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
	q := `UPDATE projects SET last_activity = MAX(last_activity, ?) WHERE id = ? AND status = ?`
	args := []any{toMicros(u.StartedAt), u.ProjectID, string(engine.StatusActive)}
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
		return err
	})
	if err != nil {
		return fmt.Errorf("begin %s use of project %s: %w", u.Kind, u.ProjectID, err)
	}
	return nil
}

// EndUse deletes the use and records the activity in one transaction.
func (s *Store) EndUse(ctx context.Context, projectID, useID string, touch time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM project_uses WHERE id = ? AND project_id = ?`, useID, projectID)
		if err := mustAffect(res, err, engine.ErrNotFound); err != nil {
			return err
		}
		if touch.IsZero() {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE projects SET last_activity = MAX(last_activity, ?) WHERE id = ?`,
			toMicros(touch), projectID)
		return err
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
