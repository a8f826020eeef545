package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sailtui/sailtui/backends/internal/sqlstore"
	"github.com/sailtui/sailtui/engine"
)

const projectCols = `id, slug, name, owner, status, status_reason, last_activity, created_at, updated_at,
	hibernation_snapshot, op_id, op_kind, op_owner, op_heartbeat, op_epoch, last_activity_source, last_activity_actor, keep_alive_until, idle_warned_at`

func scanProject(sc scanner) (engine.Project, error) {
	var p engine.Project
	var last, created, updated, hb, alive, warned int64
	err := sc.Scan(&p.ID, &p.Slug, &p.Name, &p.Owner, &p.Status, &p.StatusReason, &last, &created,
		&updated, &p.HibernationSnapshot, &p.OpID, &p.OpKind, &p.OpOwner, &hb, &p.OpEpoch,
		&p.LastActivitySource, &p.LastActivityActor, &alive, &warned)
	if err != nil {
		return engine.Project{}, err
	}
	p.LastActivity, p.CreatedAt, p.UpdatedAt, p.OpHeartbeat = fromMicros(last), fromMicros(created), fromMicros(updated), fromMicros(hb)
	p.KeepAliveUntil, p.IdleWarnedAt = fromMicros(alive), fromMicros(warned)
	return p, nil
}

// CreateProject inserts a project with its containers and connections in one transaction.
func (s *Store) CreateProject(ctx context.Context, p engine.Project, cs []engine.Container, conns []engine.Connection) error {
	p, err := sqlstore.NewProject(p)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO projects (`+projectCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.Slug, p.Name, p.Owner, string(p.Status), p.StatusReason, toMicros(p.LastActivity),
			toMicros(p.CreatedAt), toMicros(p.UpdatedAt), p.HibernationSnapshot, p.OpID, p.OpKind,
			p.OpOwner, toMicros(p.OpHeartbeat), p.OpEpoch, p.LastActivitySource, p.LastActivityActor,
			toMicros(p.KeepAliveUntil), toMicros(p.IdleWarnedAt))
		if isUnique(err) {
			return sqlstore.ProjectExists(p, strings.Contains(err.Error(), "projects.slug"))
		}
		if err != nil {
			return err
		}
		return sqlstore.PutChildren(ctx, tx, p.ID, cs, conns, putContainer, putConnection)
	})
	if err != nil {
		return fmt.Errorf("create project %s: %w", p.Slug, err)
	}
	return nil
}

// GetProject finds a project by id, else by slug preferring the live project, then the most
// recently updated deleted one.
func (s *Store) GetProject(ctx context.Context, idOrSlug string) (engine.Project, error) {
	p, err := scanProject(s.db.QueryRowContext(ctx, `SELECT `+projectCols+` FROM projects
		WHERE id = ? OR slug = ?
		ORDER BY id = ? DESC, status = 'deleted', updated_at DESC, created_at DESC
		LIMIT 1`, idOrSlug, idOrSlug, idOrSlug))
	return sqlstore.Found(p, err, sql.ErrNoRows, "project", idOrSlug)
}

// ListProjects lists projects in creation order. Deleted projects are listed when the filter
// includes them or names the deleted status explicitly.
func (s *Store) ListProjects(ctx context.Context, f engine.ProjectFilter) ([]engine.Project, error) {
	q := `SELECT ` + projectCols + ` FROM projects WHERE 1 = 1`
	var args []any
	if len(f.Statuses) > 0 {
		q += ` AND status IN (` + placeholders(len(f.Statuses)) + `)`
		for _, st := range f.Statuses {
			args = append(args, string(st))
		}
	}
	if !f.IncludeDeleted && !slices.Contains(f.Statuses, engine.StatusDeleted) {
		q += ` AND status <> 'deleted'`
	}
	if f.Owner != "" {
		q += ` AND owner = ?`
		args = append(args, f.Owner)
	}
	q += ` ORDER BY created_at, id`
	ps, err := queryAll(ctx, s.db, scanProject, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return ps, nil
}

// IdleProjects lists active, unheld projects last active strictly before idleBefore and not kept
// alive at asOf, oldest first.
func (s *Store) IdleProjects(ctx context.Context, idleBefore, asOf time.Time, limit int) ([]engine.Project, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	ps, err := queryAll(ctx, s.db, scanProject, `SELECT `+projectCols+` FROM projects
		WHERE status = 'active' AND op_id = '' AND last_activity < ? AND keep_alive_until <= ?
		ORDER BY last_activity, id
		LIMIT ?`, toMicros(idleBefore), toMicros(asOf), limit)
	if err != nil {
		return nil, fmt.Errorf("list idle projects: %w", err)
	}
	return ps, nil
}

// HeldProjects lists projects held by an operation, stalest heartbeat first.
func (s *Store) HeldProjects(ctx context.Context) ([]engine.Project, error) {
	ps, err := queryAll(ctx, s.db, scanProject, `SELECT `+projectCols+` FROM projects
		WHERE op_id <> '' ORDER BY op_heartbeat, id`)
	if err != nil {
		return nil, fmt.Errorf("list held projects: %w", err)
	}
	return ps, nil
}

// Touch records activity; it never moves last_activity backwards, so late or reordered reports
// cannot make a busy project look idle, nor give it the source of an older touch.
func (s *Store) Touch(ctx context.Context, projectID string, a engine.Activity) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE projects SET `+touchSet+` WHERE id = ?`,
			append(touchArgs(a), projectID)...)
		if err := mustAffect(res, err, engine.ErrNotFound); err != nil {
			return err
		}
		return recordActivity(ctx, tx, projectID, a, 1)
	})
	if err != nil {
		return fmt.Errorf("touch project %s: %w", projectID, err)
	}
	return nil
}

// SetKeepAlive sets (or, with a zero until, clears) the keep-alive and records a with it.
func (s *Store) SetKeepAlive(ctx context.Context, projectID string, until time.Time, a engine.Activity) (engine.Project, error) {
	q, args := `UPDATE projects SET keep_alive_until = ?`, []any{toMicros(until)}
	if !a.At.IsZero() {
		q += `, ` + touchSet
		args = append(args, touchArgs(a)...)
	}
	var p engine.Project
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		p, err = scanProject(tx.QueryRowContext(ctx, q+` WHERE id = ? RETURNING `+projectCols, append(args, projectID)...))
		if errors.Is(err, sql.ErrNoRows) {
			return engine.ErrNotFound
		}
		if err != nil || a.At.IsZero() {
			return err
		}
		return recordActivity(ctx, tx, projectID, a, 1)
	})
	if err != nil {
		return engine.Project{}, fmt.Errorf("keep project %s alive until %s: %w", projectID, until.Format(time.RFC3339), err)
	}
	return p, nil
}

// MarkIdleWarned records when the sweep warned.
func (s *Store) MarkIdleWarned(ctx context.Context, projectID string, at time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE projects SET idle_warned_at = ? WHERE id = ?`, toMicros(at), projectID)
		if err := mustAffect(res, err, engine.ErrNotFound); err != nil {
			return err
		}
		return addHistory(ctx, tx, projectID, engine.HistoryIdleWarning, engine.Activity{At: at, Source: "sweep"})
	})
	if err != nil {
		return fmt.Errorf("record the idle warning of project %s: %w", projectID, err)
	}
	return nil
}

// touchSet records an activity (touchArgs) with max semantics. Every expression of a SET reads
// the row as it was before the UPDATE, so the source is compared with the old last_activity.
const touchSet = `last_activity_source = CASE WHEN ? >= last_activity THEN ? ELSE last_activity_source END,
	last_activity_actor = CASE WHEN ? >= last_activity THEN ? ELSE last_activity_actor END,
	last_activity = MAX(last_activity, ?)`

func touchArgs(a engine.Activity) []any {
	at := toMicros(a.At)
	return []any{at, a.Source, at, a.Actor, at}
}

// mustAffect turns "no row changed" into miss.
func mustAffect(res sql.Result, err error, miss error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return miss
	}
	return nil
}

// ListProjectsChangedSince reads the projects whose change number (migration 0005) is above
// cursor; cursor 0 reads every live project. The next cursor is the largest number read:
// SQLite hands numbers out in commit order, so nothing below it can still appear.
func (s *Store) ListProjectsChangedSince(ctx context.Context, cursor int64) (engine.ProjectChanges, error) {
	if cursor == 0 {
		return s.listLive(ctx)
	}
	out := engine.ProjectChanges{Cursor: cursor}
	st, err := s.changedStmt(ctx)
	var rows *sql.Rows
	if err == nil {
		rows, err = st.QueryContext(ctx, cursor)
	}
	if err = scanChanges(rows, err, &out); err != nil {
		return engine.ProjectChanges{}, fmt.Errorf("list projects changed since %d: %w", cursor, err)
	}
	return out, nil
}

// The whole list is read in parts, side by side on connections of their own, one per
// listPartRows projects and at most listParts: a row costs a call into SQLite per column, and
// one connection reads on one core (at 100k projects that was most of the console's time to
// its first list). Variables so that a test can read a small table in parts.
var (
	listPartRows = 8192
	listParts    = min(runtime.GOMAXPROCS(0), 4)
	// listPartStarting, when set, runs before a part's query: a test holds one part back so
	// that the parts read snapshots far apart.
	listPartStarting func(part int)
)

// listLive reads every live project: a plain scan of the table in rowid ranges, not a walk
// of the change index (which would cost a lookup per row).
func (s *Store) listLive(ctx context.Context) (engine.ProjectChanges, error) {
	fail := func(err error) (engine.ProjectChanges, error) {
		return engine.ProjectChanges{}, fmt.Errorf("list projects: %w", err)
	}
	// Sizes the answer once rather than growing it a row at a time: a hint only (deleted
	// projects are counted, and writes go on), but without a WHERE SQLite counts the table's
	// pages, not its rows.
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM projects`).Scan(&n); err != nil {
		return fail(fmt.Errorf("count: %w", err))
	}
	parts := min(max(n/listPartRows, 1), listParts)
	if parts == 1 {
		out := engine.ProjectChanges{Projects: make([]engine.Project, 0, n)}
		if err := s.scanMapped(ctx, &out, `SELECT `+listCols+` FROM projects WHERE status <> 'deleted'`); err != nil {
			return fail(err)
		}
		return out, nil
	}
	// The parts are statements of their own, each reading its own snapshot of the table. The
	// cursor is therefore the newest change number before any of them started: every change
	// up to it is in every part's snapshot, and whatever a part saw after it is read again by
	// the next incremental read, which is harmless.
	var before, lo, hi int64
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(change_seq), 0) FROM projects`).Scan(&before); err != nil {
		return fail(fmt.Errorf("newest change: %w", err))
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MIN(rowid), 0) FROM projects`).Scan(&lo); err != nil {
		return fail(fmt.Errorf("first row: %w", err))
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(rowid), 0) FROM projects`).Scan(&hi); err != nil {
		return fail(fmt.Errorf("last row: %w", err))
	}
	// The parts scan into one array, each from its place in it: with rowids dense (no
	// projects removed, none deleted) they end up side by side and nothing is copied; else
	// each is moved down after the one before. A fleet is a lot of memory to copy, and on a
	// VM every page first touched is a fault. The last part, open-ended, has room for a few
	// projects added meanwhile and grows elsewhere past that. Rowids far sparser than the
	// count (a table emptied and refilled) get a slice per part instead.
	span := hi - lo + 1
	var all []engine.Project
	if span <= 2*int64(n)+1024 {
		all = make([]engine.Project, 0, span+int64(n/16)+16)
	}
	got := make([]engine.ProjectChanges, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := range parts {
		// The last part is open-ended: it takes the rows inserted since hi was read.
		from, to := lo+span*int64(i)/int64(parts), int64(math.MaxInt64)
		if i < parts-1 {
			to = lo + span*int64(i+1)/int64(parts)
		}
		if all != nil {
			end := int64(cap(all))
			if i < parts-1 {
				end = to - lo
			}
			got[i].Projects = all[from-lo : from-lo : end]
		} else {
			got[i].Projects = make([]engine.Project, 0, n/parts+n/16)
		}
		wg.Go(func() {
			if listPartStarting != nil {
				listPartStarting(i)
			}
			errs[i] = s.scanMapped(ctx, &got[i], `SELECT `+listCols+` FROM projects
				WHERE status <> 'deleted' AND rowid >= ? AND rowid < ?`, from, to)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	out := engine.ProjectChanges{Cursor: before, Projects: all}
	if all == nil {
		total := 0
		for _, g := range got {
			total += len(g.Projects)
		}
		out.Projects = make([]engine.Project, 0, total)
	}
	for _, g := range got {
		if k := len(out.Projects); len(g.Projects) > 0 && k < cap(all) && &g.Projects[0] == &all[:k+1][k] {
			out.Projects = out.Projects[:k+len(g.Projects)] // already in place
			continue
		}
		out.Projects = append(out.Projects, g.Projects...)
	}
	return out, nil
}

// scanMapped runs query on a connection of its own that reads the database file through a
// memory map for this read only, and appends its projects to out (scanChanges).
//
// Why: the whole list is read in a fresh process (the console's first), where every page of
// heap first touched is a page fault (10-25 µs each on this VM), and SQLite copies each page it
// reads into a page cache of its own. Mapped, the file's pages come from the kernel's cache 16
// at a fault: the first read of 10k projects took 77-88 ms instead of 97-117 (issue 19). The
// map is dropped before the connection goes back to the pool, since it keeps every page read
// in the process's resident memory, once per connection that mapped it.
func (s *Store) scanMapped(ctx context.Context, out *engine.ProjectChanges, query string, args ...any) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA mmap_size = 268435456"); err != nil {
		return fmt.Errorf("map the database: %w", err)
	}
	defer func() { _, _ = c.ExecContext(context.WithoutCancel(ctx), "PRAGMA mmap_size = 0") }()
	rows, err := c.QueryContext(ctx, query, args...)
	return scanChanges(rows, err, out)
}

// listCols are projectCols and change_seq as the lists read them: the columns most projects
// leave empty come as NULL, which SQLite hands over in one call instead of three (a call
// into SQLite per column and row is most of what a list of 100k projects costs).
const listCols = `id, slug, name, owner, status, NULLIF(status_reason, ''), last_activity, created_at,
	updated_at, NULLIF(hibernation_snapshot, ''), NULLIF(op_id, ''), NULLIF(op_kind, ''),
	NULLIF(op_owner, ''), op_heartbeat, op_epoch, change_seq, NULLIF(last_activity_source, ''),
	NULLIF(last_activity_actor, ''), keep_alive_until, idle_warned_at`

// scanChanges appends the projects of rows (listCols) to out, moving its cursor to the largest
// change number read; err is the query's error. Every row is scanned into the same
// destinations, so a row costs no allocation but its strings.
func scanChanges(rows *sql.Rows, err error, out *engine.ProjectChanges) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		p                                              engine.Project
		last, created, updated, hb, seq, alive, warned int64
	)
	dest := []any{&p.ID, &p.Slug, &p.Name, &p.Owner, text[engine.ProjectStatus]{&p.Status},
		text[string]{&p.StatusReason}, &last, &created, &updated, text[string]{&p.HibernationSnapshot},
		text[string]{&p.OpID}, text[engine.OpKind]{&p.OpKind}, text[string]{&p.OpOwner}, &hb, &p.OpEpoch, &seq,
		text[string]{&p.LastActivitySource}, text[string]{&p.LastActivityActor}, &alive, &warned}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		p.LastActivity, p.CreatedAt, p.UpdatedAt, p.OpHeartbeat = fromMicros(last), fromMicros(created), fromMicros(updated), fromMicros(hb)
		p.KeepAliveUntil, p.IdleWarnedAt = fromMicros(alive), fromMicros(warned)
		out.Projects = append(out.Projects, p)
		out.Cursor = max(out.Cursor, seq)
	}
	return rows.Err()
}

// text scans a TEXT column, NULL as "", into a string or a string type without the
// reflection database/sql uses for the latter.
type text[T ~string] struct{ p *T }

func (t text[T]) Scan(src any) error {
	switch v := src.(type) {
	case string:
		*t.p = T(v)
	case []byte:
		*t.p = T(v)
	case nil:
		*t.p = ""
	default:
		return fmt.Errorf("scan %T into text", src)
	}
	return nil
}

// changedStmt prepares the incremental read once.
func (s *Store) changedStmt(ctx context.Context) (*sql.Stmt, error) {
	s.changedMu.Lock()
	defer s.changedMu.Unlock()
	if s.changed == nil {
		st, err := s.db.PrepareContext(ctx, `SELECT `+listCols+` FROM projects
			WHERE change_seq > ? ORDER BY change_seq`)
		if err != nil {
			return nil, err
		}
		s.changed = st
	}
	return s.changed, nil
}
