package postgres

// The holds on a project: the exclusive one of an operation (a claim, its heartbeat and its
// release) and the shared uses of file operations and execs, which begin only while no
// exclusive operation holds the project (invariant 9), so both read the same hold columns.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sailtui/sailtui/backends/internal/sqlstore"
	"github.com/sailtui/sailtui/engine"
)

// claimQuery is one conditional UPDATE. Racing claims queue on the row lock and PostgreSQL
// re-checks the WHERE clause against the row the winner left behind, so exactly one matches.
// An empty To ($2) keeps the status; a new status clears the reason, which explained the old one.
// Every claim gives the project the next hold epoch; a takeover ($8) moves its journal entry to
// that epoch in the same statement, so the stale holder's next journal write is refused.
const claimQuery = `WITH claimed AS (UPDATE projects SET
		status = CASE WHEN $2::text = '' THEN status ELSE $2::text END,
		status_reason = CASE WHEN $2::text = '' THEN status_reason ELSE '' END,
		op_id = $3, op_kind = $4, op_owner = $5, op_heartbeat = $6, updated_at = $6,
		op_epoch = op_epoch + 1
	WHERE id = $1 AND status = ANY($7::text[])
		AND (op_id = '' OR ($8::text <> '' AND op_id = $8::text))
		AND ($9::timestamptz IS NULL OR last_activity <= $9::timestamptz)
		AND ($10::timestamptz IS NULL OR keep_alive_until <= $10::timestamptz)
	RETURNING ` + projectCols + `), moved AS (UPDATE operations SET epoch = (SELECT op_epoch FROM claimed)
	WHERE $8::text <> '' AND id = $8::text AND project_id = $1 AND EXISTS (SELECT 1 FROM claimed))
	SELECT ` + projectCols + ` FROM claimed`

// ClaimProject atomically takes a project for an operation; see engine.Claim.
func (s *Store) ClaimProject(ctx context.Context, projectID string, c engine.Claim) (engine.Project, error) {
	if c.OpID == "" || len(c.From) == 0 {
		return engine.Project{}, fmt.Errorf("claim project %s: %w: op id and from statuses are required", projectID, engine.ErrBadInput)
	}
	// A stale holder named in TakeOver may have released meanwhile; the free project is then
	// claimed all the same.
	var idleBefore *time.Time
	if !c.IdleBefore.IsZero() {
		idleBefore = &c.IdleBefore
	}
	var keptAliveAt *time.Time
	if !c.KeptAliveAt.IsZero() {
		keptAliveAt = &c.KeptAliveAt
	}
	p, err := scanProject(s.pool.QueryRow(ctx, claimQuery, projectID, string(c.To), c.OpID, string(c.Kind),
		c.Owner, c.Now, strs(c.From), c.TakeOver, idleBefore, keptAliveAt))
	if err != nil {
		return engine.Project{}, fmt.Errorf("claim project %s for %s %s: %w", projectID, c.Kind, c.OpID, s.explainUpdate(ctx, projectID, err))
	}
	return p, nil
}

// Heartbeat refreshes the holder's heartbeat.
func (s *Store) Heartbeat(ctx context.Context, projectID string, h engine.Hold, at time.Time) error {
	var id string
	err := s.pool.QueryRow(ctx, `UPDATE projects SET op_heartbeat = $4
		WHERE id = $1 AND op_id = $2 AND op_id <> '' AND op_epoch = $3 RETURNING id`, projectID, h.OpID, h.Epoch, at).Scan(&id)
	if err != nil {
		return fmt.Errorf("heartbeat project %s for op %s: %w", projectID, h.OpID, s.explainFenced(ctx, projectID, h, err))
	}
	return nil
}

// SetProjectStatus moves a held project to another status, keeping the hold.
func (s *Store) SetProjectStatus(ctx context.Context, projectID string, h engine.Hold, to engine.ProjectStatus, reason string, at time.Time) (engine.Project, error) {
	p, err := scanProject(s.pool.QueryRow(ctx, `UPDATE projects SET status = $4, status_reason = $5, updated_at = $6
		WHERE id = $1 AND op_id = $2 AND op_id <> '' AND op_epoch = $3
		RETURNING `+projectCols, projectID, h.OpID, h.Epoch, string(to), reason, at))
	if err != nil {
		return engine.Project{}, fmt.Errorf("set project %s status %s for op %s: %w", projectID, to, h.OpID, s.explainFenced(ctx, projectID, h, err))
	}
	return p, nil
}

// ReleaseProject ends the hold of r.OpID. An empty r.To keeps the status.
func (s *Store) ReleaseProject(ctx context.Context, projectID string, r engine.Release) (engine.Project, error) {
	p, err := scanProject(s.pool.QueryRow(ctx, `UPDATE projects SET
			status = CASE WHEN $3::text = '' THEN status ELSE $3::text END,
			status_reason = $4, updated_at = $5,
			op_id = '', op_kind = '', op_owner = '', op_heartbeat = $6,
			hibernation_snapshot = CASE WHEN $7::boolean THEN $8::text ELSE hibernation_snapshot END
		WHERE id = $1 AND op_id = $2 AND op_id <> '' AND op_epoch = $9
		RETURNING `+projectCols,
		projectID, r.OpID, string(r.To), r.Reason, r.Now, time.Time{}, r.SetHibernationSnapshot, r.HibernationSnapshot, r.Epoch))
	if err != nil {
		return engine.Project{}, fmt.Errorf("release project %s from op %s: %w", projectID, r.OpID,
			s.explainFenced(ctx, projectID, engine.Hold{OpID: r.OpID, Epoch: r.Epoch}, err))
	}
	return p, nil
}

// explainFenced maps the error of an UPDATE fenced by h: a miss is ErrSuperseded (or
// ErrNotFound), with the holder it found instead.
func (s *Store) explainFenced(ctx context.Context, projectID string, h engine.Hold, err error) error {
	if !errors.Is(err, pgx.ErrNoRows) {
		return s.explainUpdate(ctx, projectID, err)
	}
	p, rerr := scanProject(s.pool.QueryRow(ctx, `SELECT `+projectCols+` FROM projects WHERE id = $1`, projectID))
	if errors.Is(rerr, pgx.ErrNoRows) {
		return engine.ErrNotFound
	}
	if rerr != nil {
		return fmt.Errorf("matched no row, then could not read the project: %w", rerr)
	}
	return sqlstore.Superseded(p, h)
}

// checkHold is the fenced read of a write by h in tx: nil while h holds projectID (or h is
// zero), else ErrSuperseded. The row is read FOR SHARE, so no claim or takeover can move the
// hold before tx ends: the check and the write it guards are one.
func checkHold(ctx context.Context, tx pgx.Tx, projectID string, h engine.Hold) error {
	if h.OpID == "" {
		return nil
	}
	p, err := scanProject(tx.QueryRow(ctx, `SELECT `+projectCols+` FROM projects WHERE id = $1 FOR SHARE`, projectID))
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("project %s: %w", projectID, engine.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("read the hold: %w", badInput(err))
	}
	return sqlstore.CheckHold(p, h)
}

// explainUpdate maps the error of a conditional UPDATE ... RETURNING on a project.
func (s *Store) explainUpdate(ctx context.Context, projectID string, err error) error {
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return s.whyNotHeld(ctx, projectID)
	case isUnique(err):
		// Leaving the deleted status while another live project took the slug.
		return fmt.Errorf("%w: slug is in use by a live project", engine.ErrExists)
	}
	return badInput(err)
}

// whyNotHeld explains a conditional update that matched nothing: the project is missing
// (ErrNotFound) or not in the expected state (ErrConflict, with what it is instead). It reads
// after the update, outside its transaction; projects are never removed, so a project found
// missing here was missing at the update too.
func (s *Store) whyNotHeld(ctx context.Context, projectID string) error {
	p, err := scanProject(s.pool.QueryRow(ctx, `SELECT `+projectCols+` FROM projects WHERE id = $1`, projectID))
	if errors.Is(err, pgx.ErrNoRows) {
		return engine.ErrNotFound
	}
	if err != nil {
		// Not reported as a conflict: nothing says the project is in another state.
		return fmt.Errorf("matched no row, then could not read the project: %w", err)
	}
	return sqlstore.NotHeld(p)
}

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
var beginUseQuery = `WITH touched AS (
		UPDATE projects SET ` + touchSet(5, 9, 4) + `
		WHERE id = $2 AND status = 'active' AND (op_id = '' OR NOT (op_kind = ANY($8::text[])))
		RETURNING id)
	INSERT INTO project_uses (` + useCols + `)
	SELECT $1, id, $3, $4, $5::timestamptz, $6, $7 FROM touched
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
	err := s.pool.QueryRow(ctx, beginUseQuery, u.ID, u.ProjectID, u.Kind, u.Owner, u.StartedAt, u.Heartbeat, u.Revoked, kinds, u.Source).Scan(&id)
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
	// The use is recorded: a history line that could not be added must not make its holder
	// believe it was not (it would never end it), so that failure is left to the next touch.
	_ = s.recordHistory(ctx, u.ProjectID, engine.HistoryActivity, engine.Activity{At: u.StartedAt, Source: u.Source, Actor: u.Owner}, 1)
	return nil
}

// endUseQuery deletes the use and, when $3 is set, records the activity, in one statement.
var endUseQuery = `WITH gone AS (
		DELETE FROM project_uses WHERE id = $1 AND project_id = $2 RETURNING project_id),
	touched AS (
		UPDATE projects SET ` + touchSet(3, 5, 6) + `
		WHERE $4::boolean AND id IN (SELECT project_id FROM gone))
	SELECT count(*) FROM gone`

// EndUse forgets a use; ErrNotFound when it was already gone.
func (s *Store) EndUse(ctx context.Context, projectID, useID string, touch engine.Activity) error {
	var n int
	err := s.pool.QueryRow(ctx, endUseQuery, useID, projectID, touch.At, !touch.At.IsZero(), touch.Source, touch.Actor).Scan(&n)
	if err == nil && n == 0 {
		err = engine.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("end use %s of project %s: %w", useID, projectID, err)
	}
	if !touch.At.IsZero() {
		// As in BeginUse: the use is gone either way, and its holder must hear that it ended.
		_ = s.recordHistory(ctx, projectID, engine.HistoryActivity, touch, 0)
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
