package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// recordActivity adds a to the project's history in the transaction that touched the project:
// it extends the newest line of a's source when that was last touched within ActivityQuiet
// before a, else it begins a line (and drops the project's lines past MaxHistory). touches is
// what a adds to the line's count: the end of a use extends its line but is the same touch.
func recordActivity(ctx context.Context, tx *sql.Tx, projectID string, a engine.Activity, touches int) error {
	at := toMicros(a.At)
	res, err := tx.ExecContext(ctx, `UPDATE project_history
		SET last_at = MAX(last_at, ?1), first_at = MIN(first_at, ?1), touches = touches + ?7,
			actor = CASE WHEN ?1 >= last_at THEN ?2 ELSE actor END
		WHERE id = (SELECT id FROM project_history WHERE project_id = ?3 AND kind = ?4 AND source = ?5 ORDER BY id DESC LIMIT 1)
			AND last_at >= ?6`,
		at, a.Actor, projectID, engine.HistoryActivity, a.Source, toMicros(a.At.Add(-engine.ActivityQuiet)), touches)
	if ok, err := changedOne(res, err); err != nil || ok {
		if err != nil {
			return fmt.Errorf("record activity in the history: %w", err)
		}
		return nil
	}
	return addHistory(ctx, tx, projectID, engine.HistoryActivity, a)
}

// addHistory begins a history line and keeps the project's newest MaxHistory.
func addHistory(ctx context.Context, tx *sql.Tx, projectID, kind string, a engine.Activity) error {
	at := toMicros(a.At)
	if _, err := tx.ExecContext(ctx, `INSERT INTO project_history (project_id, kind, source, actor, first_at, last_at)
		VALUES (?, ?, ?, ?, ?, ?)`, projectID, kind, a.Source, a.Actor, at, at); err != nil {
		return fmt.Errorf("add a %s line to the history: %w", kind, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM project_history WHERE project_id = ?1 AND id <= (
		SELECT id FROM project_history WHERE project_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)`, projectID, engine.MaxHistory); err != nil {
		return fmt.Errorf("trim the history: %w", err)
	}
	return nil
}

// ListHistory lists the project's history lines, newest first.
func (s *Store) ListHistory(ctx context.Context, projectID string, limit int) ([]engine.HistoryEntry, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	lines, err := queryAll(ctx, s.db, func(r scanner) (engine.HistoryEntry, error) {
		var (
			h           engine.HistoryEntry
			first, last int64
		)
		if err := r.Scan(&h.Kind, &h.Source, &h.Actor, &first, &last, &h.Count); err != nil {
			return h, err
		}
		h.At, h.Until = fromMicros(first), fromMicros(last)
		if h.Kind != engine.HistoryActivity {
			h.Until, h.Count = time.Time{}, 0 // a moment, not a span
		}
		return h, nil
	}, `SELECT kind, source, actor, first_at, last_at, touches FROM project_history WHERE project_id = ?
		ORDER BY id DESC LIMIT ?`, projectID, limit)
	if err != nil {
		return nil, fmt.Errorf("list the history of %s: %w", projectID, err)
	}
	return lines, nil
}

// RouterCounters reads the counters the last sweep kept for router.
func (s *Store) RouterCounters(ctx context.Context, router string) (map[string]float64, error) {
	var raw string
	err := s.db.QueryRowContext(ctx, `SELECT counters FROM router_counters WHERE router = ?`, router).Scan(&raw)
	out := map[string]float64{}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("read the counters kept for %s: %w", router, err)
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("read the counters kept for %s: %w", router, err)
	}
	return out, nil
}

// SaveRouterCounters replaces the counters kept for router.
func (s *Store) SaveRouterCounters(ctx context.Context, router string, counters map[string]float64) error {
	raw, err := json.Marshal(counters)
	if err != nil {
		return fmt.Errorf("keep the counters of %s: %w", router, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO router_counters (router, counters) VALUES (?, ?)
			ON CONFLICT (router) DO UPDATE SET counters = excluded.counters`, router, string(raw))
		return err
	})
	if err != nil {
		return fmt.Errorf("keep the counters of %s: %w", router, err)
	}
	return nil
}
