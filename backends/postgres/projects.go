package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sailtui/sailtui/backends/internal/sqlstore"
	"github.com/sailtui/sailtui/engine"
)

const projectCols = `id, slug, name, owner, status, status_reason, last_activity, created_at, updated_at,
	hibernation_snapshot, op_id, op_kind, op_owner, op_heartbeat, op_epoch, last_activity_source, last_activity_actor, keep_alive_until, idle_warned_at`

func scanProject(row pgx.Row) (engine.Project, error) {
	var p engine.Project
	err := row.Scan(&p.ID, &p.Slug, &p.Name, &p.Owner, &p.Status, &p.StatusReason, &p.LastActivity,
		&p.CreatedAt, &p.UpdatedAt, &p.HibernationSnapshot, &p.OpID, &p.OpKind, &p.OpOwner, &p.OpHeartbeat, &p.OpEpoch,
		&p.LastActivitySource, &p.LastActivityActor, &p.KeepAliveUntil, &p.IdleWarnedAt)
	if err != nil {
		return engine.Project{}, err
	}
	p.LastActivity, p.CreatedAt, p.UpdatedAt, p.OpHeartbeat = fromDB(p.LastActivity), fromDB(p.CreatedAt),
		fromDB(p.UpdatedAt), fromDB(p.OpHeartbeat)
	p.KeepAliveUntil, p.IdleWarnedAt = fromDB(p.KeepAliveUntil), fromDB(p.IdleWarnedAt)
	return p, nil
}

func (s *Store) queryProjects(ctx context.Context, q string, args ...any) ([]engine.Project, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Project, error) { return scanProject(r) })
}

// CreateProject inserts a project with its containers and connections in one transaction.
func (s *Store) CreateProject(ctx context.Context, p engine.Project, cs []engine.Container, conns []engine.Connection) error {
	p, err := sqlstore.NewProject(p)
	if err != nil {
		return err
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO projects (`+projectCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
			p.ID, p.Slug, p.Name, p.Owner, string(p.Status), p.StatusReason, p.LastActivity,
			p.CreatedAt, p.UpdatedAt, p.HibernationSnapshot, p.OpID, p.OpKind, p.OpOwner, p.OpHeartbeat, p.OpEpoch,
			p.LastActivitySource, p.LastActivityActor, p.KeepAliveUntil, p.IdleWarnedAt)
		if isUnique(err) {
			_, constraint := pgCode(err)
			return sqlstore.ProjectExists(p, constraint == "projects_live_slug")
		}
		if err != nil {
			return badInput(err)
		}
		return sqlstore.PutChildren[execer](ctx, tx, p.ID, cs, conns, putContainer, putConnection)
	})
	if err != nil {
		return fmt.Errorf("create project %s: %w", p.Slug, err)
	}
	return nil
}

// GetProject finds a project by id, else by slug preferring the live project, then the most
// recently updated deleted one.
func (s *Store) GetProject(ctx context.Context, idOrSlug string) (engine.Project, error) {
	p, err := scanProject(s.pool.QueryRow(ctx, `SELECT `+projectCols+` FROM projects
		WHERE id = $1 OR slug = $1
		ORDER BY id = $1 DESC, status = 'deleted', updated_at DESC, created_at DESC
		LIMIT 1`, idOrSlug))
	return sqlstore.Found(p, badInput(err), pgx.ErrNoRows, "project", idOrSlug)
}

// ListProjects lists projects in creation order. Deleted projects are listed when the filter
// includes them or names the deleted status explicitly.
func (s *Store) ListProjects(ctx context.Context, f engine.ProjectFilter) ([]engine.Project, error) {
	q := `SELECT ` + projectCols + ` FROM projects WHERE true`
	var args params
	if len(f.Statuses) > 0 {
		q += ` AND status = ANY(` + args.add(strs(f.Statuses)) + `)`
	}
	if !f.IncludeDeleted && !slices.Contains(f.Statuses, engine.StatusDeleted) {
		q += ` AND status <> 'deleted'`
	}
	if f.Owner != "" {
		q += ` AND owner = ` + args.add(f.Owner)
	}
	q += ` ORDER BY created_at, id`
	ps, err := s.queryProjects(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", badInput(err))
	}
	return ps, nil
}

// IdleProjects lists active, unheld projects last active strictly before idleBefore, oldest
// first, leaving out those kept alive at asOf. The conditions and order are those of the partial
// index projects_idle; the keep-alive is a filter on the rows it gives.
func (s *Store) IdleProjects(ctx context.Context, idleBefore, asOf time.Time, limit int) ([]engine.Project, error) {
	ps, err := s.queryProjects(ctx, idleQuery+limitClause(limit), idleBefore, asOf)
	if err != nil {
		return nil, fmt.Errorf("list idle projects: %w", err)
	}
	return ps, nil
}

const idleQuery = `SELECT ` + projectCols + ` FROM projects
	WHERE status = 'active' AND op_id = '' AND last_activity < $1 AND keep_alive_until <= $2
	ORDER BY last_activity, id`

// HeldProjects lists projects held by an operation, stalest heartbeat first.
func (s *Store) HeldProjects(ctx context.Context) ([]engine.Project, error) {
	ps, err := s.queryProjects(ctx, `SELECT `+projectCols+` FROM projects
		WHERE op_id <> '' ORDER BY op_heartbeat, id`)
	if err != nil {
		return nil, fmt.Errorf("list held projects: %w", err)
	}
	return ps, nil
}

// Touch records activity; it never moves last_activity backwards, so late or reordered reports
// cannot make a busy project look idle, nor give it the source of an older touch.
func (s *Store) Touch(ctx context.Context, projectID string, a engine.Activity) error {
	tag, err := s.pool.Exec(ctx, `UPDATE projects SET `+touchSet(2, 3, 4)+` WHERE id = $1`,
		projectID, a.At, a.Source, a.Actor)
	if err == nil && tag.RowsAffected() == 0 {
		err = engine.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("touch project %s: %w", projectID, badInput(err))
	}
	return s.recordHistory(ctx, projectID, engine.HistoryActivity, a, 1)
}

// SetKeepAlive sets (or, with a zero until, clears) the keep-alive and records a with it.
func (s *Store) SetKeepAlive(ctx context.Context, projectID string, until time.Time, a engine.Activity) (engine.Project, error) {
	q, args := `UPDATE projects SET keep_alive_until = $2`, []any{projectID, until}
	if !a.At.IsZero() {
		q += `, ` + touchSet(3, 4, 5)
		args = append(args, a.At, a.Source, a.Actor)
	}
	p, err := scanProject(s.pool.QueryRow(ctx, q+` WHERE id = $1 RETURNING `+projectCols, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		err = engine.ErrNotFound
	}
	if err != nil {
		return engine.Project{}, fmt.Errorf("keep project %s alive until %s: %w", projectID, until.Format(time.RFC3339), badInput(err))
	}
	if !a.At.IsZero() {
		if err := s.recordHistory(ctx, projectID, engine.HistoryActivity, a, 1); err != nil {
			return p, err
		}
	}
	return p, nil
}

// MarkIdleWarned records when the sweep warned.
func (s *Store) MarkIdleWarned(ctx context.Context, projectID string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE projects SET idle_warned_at = $2 WHERE id = $1`, projectID, at)
	if err == nil && tag.RowsAffected() == 0 {
		err = engine.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("record the idle warning of project %s: %w", projectID, badInput(err))
	}
	return s.recordHistory(ctx, projectID, engine.HistoryIdleWarning, engine.Activity{At: at, Source: "sweep"}, 1)
}

// touchSet records an activity whose time, source and actor are the parameters numbered at,
// source and actor, with max semantics. Every expression of a SET reads the row as it was
// before the UPDATE, so the source is compared with the old last_activity.
func touchSet(at, source, actor int) string {
	return fmt.Sprintf(`last_activity_source = CASE WHEN $%[1]d::timestamptz >= last_activity THEN $%[2]d::text ELSE last_activity_source END,
		last_activity_actor = CASE WHEN $%[1]d::timestamptz >= last_activity THEN $%[3]d::text ELSE last_activity_actor END,
		last_activity = GREATEST(last_activity, $%[1]d::timestamptz)`, at, source, actor)
}

// ListProjectsChangedSince reads the projects stamped (migration 0005) by a transaction no
// older than cursor; cursor 0 reads every live project. The next cursor is the oldest
// transaction still running when this read's snapshot was taken: every older one had ended,
// so their writes are all in this read, while a younger one may commit after it and is read
// again next time. Both queries share one snapshot (repeatable read).
func (s *Store) ListProjectsChangedSince(ctx context.Context, cursor int64) (engine.ProjectChanges, error) {
	var out engine.ProjectChanges
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&out.Cursor); err != nil {
			return err
		}
		// The first read is every live project, in no particular order (a plain scan).
		q := `SELECT ` + projectCols + ` FROM projects WHERE status <> 'deleted' AND $1::bigint = 0`
		if cursor != 0 {
			q = `SELECT ` + projectCols + ` FROM projects WHERE change_xid >= $1 ORDER BY change_xid, id`
		}
		rows, err := tx.Query(ctx, q, cursor)
		if err != nil {
			return err
		}
		out.Projects, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.Project, error) { return scanProject(r) })
		return err
	})
	if err != nil {
		return engine.ProjectChanges{}, fmt.Errorf("list projects changed since %d: %w", cursor, err)
	}
	return out, nil
}
