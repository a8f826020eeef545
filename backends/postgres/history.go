package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sailtui/sailtui/engine"
)

// historyQuery records one activity or warning in a project's history in one statement: an
// activity extends the newest line of its source when that was last touched within
// ActivityQuiet ($6) before it, else a line is begun; a project's lines past MaxHistory go.
// The DELETE sees the table as it was before the INSERT, hence MaxHistory-1 ($7).
const historyQuery = `WITH line AS (
		SELECT id FROM project_history
		WHERE $8::boolean AND project_id = $1 AND kind = $2 AND source = $3
		ORDER BY id DESC LIMIT 1 FOR UPDATE),
	extended AS (
		UPDATE project_history h SET last_at = GREATEST(h.last_at, $4::timestamptz),
			first_at = LEAST(h.first_at, $4::timestamptz), touches = h.touches + $9,
			actor = CASE WHEN $4::timestamptz >= h.last_at THEN $5::text ELSE h.actor END
		FROM line WHERE h.id = line.id AND h.last_at >= $6::timestamptz
		RETURNING h.id),
	added AS (
		INSERT INTO project_history (project_id, kind, source, actor, first_at, last_at)
		SELECT $1, $2, $3, $5, $4::timestamptz, $4::timestamptz WHERE NOT EXISTS (SELECT 1 FROM extended)
		RETURNING id)
	DELETE FROM project_history WHERE project_id = $1 AND EXISTS (SELECT 1 FROM added)
		AND id <= (SELECT id FROM project_history WHERE project_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $7)`

// recordHistory adds a to the project's history as a line of kind; activity lines coalesce,
// adding touches to the count (0: the end of a use, the same touch as its beginning).
// It runs after the write that touched the project, as its own statement: the history
// explains, the touch decides, so a history that failed to record fails nothing but is logged
// by the caller's error.
func (s *Store) recordHistory(ctx context.Context, projectID, kind string, a engine.Activity, touches int) error {
	coalesce := kind == engine.HistoryActivity
	if _, err := s.pool.Exec(ctx, historyQuery, projectID, kind, a.Source, a.At, a.Actor,
		a.At.Add(-engine.ActivityQuiet), engine.MaxHistory-1, coalesce, touches); err != nil {
		return fmt.Errorf("record %s in the history of %s: %w", kind, projectID, badInput(err))
	}
	return nil
}

// ListHistory lists the project's history lines, newest first.
func (s *Store) ListHistory(ctx context.Context, projectID string, limit int) ([]engine.HistoryEntry, error) {
	q := `SELECT kind, source, actor, first_at, last_at, touches FROM project_history WHERE project_id = $1 ORDER BY id DESC`
	args := []any{projectID}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list the history of %s: %w", projectID, err)
	}
	lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (engine.HistoryEntry, error) {
		var h engine.HistoryEntry
		if err := r.Scan(&h.Kind, &h.Source, &h.Actor, &h.At, &h.Until, &h.Count); err != nil {
			return h, err
		}
		h.At, h.Until = h.At.UTC(), h.Until.UTC()
		if h.Kind != engine.HistoryActivity {
			h.Until, h.Count = time.Time{}, 0 // a moment, not a span
		}
		return h, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the history of %s: %w", projectID, err)
	}
	return lines, nil
}

// RouterCounters reads the counters the last sweep kept for router.
func (s *Store) RouterCounters(ctx context.Context, router string) (map[string]float64, error) {
	out := map[string]float64{}
	err := s.pool.QueryRow(ctx, `SELECT counters FROM router_counters WHERE router = $1`, router).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return map[string]float64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the counters kept for %s: %w", router, err)
	}
	return out, nil
}

// SaveRouterCounters replaces the counters kept for router.
func (s *Store) SaveRouterCounters(ctx context.Context, router string, counters map[string]float64) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO router_counters (router, counters) VALUES ($1, $2)
		ON CONFLICT (router) DO UPDATE SET counters = excluded.counters`, router, counters); err != nil {
		return fmt.Errorf("keep the counters of %s: %w", router, badInput(err))
	}
	return nil
}
