package postgres

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
)

// fleetSize is the fleet the sweep queries are planned and timed against.
const fleetSize = 100_000

var benchNow = time.Date(2031, 5, 6, 7, 0, 0, 0, time.UTC)

// seedFleet COPYs n projects: 80% active (1% of them held by an operation), 15% hibernated,
// 5% deleted, last active at spread times over the past 30 days; then ANALYZEs.
func seedFleet(tb testing.TB, s *Store, prefix string, n int) {
	tb.Helper()
	ctx := tb.Context()
	span := 30 * 24 * time.Hour
	rows := pgx.CopyFromSlice(n, func(i int) ([]any, error) {
		status, opID, hb := engine.StatusActive, "", time.Time{}
		switch {
		case i%20 == 0:
			status = engine.StatusDeleted
		case i%20 < 4:
			status = engine.StatusHibernated
		case i%100 == 7:
			opID, hb = fmt.Sprintf("op-%s-%d", prefix, i), benchNow.Add(-time.Duration(i%600)*time.Second)
		}
		// A multiplicative stride spreads activity times without sorting them by id.
		last := benchNow.Add(-time.Duration((int64(i)*7919)%int64(n)) * (span / time.Duration(n)))
		return []any{fmt.Sprintf("%s-%06d", prefix, i), fmt.Sprintf("%s-slug-%06d", prefix, i), "", "owner",
			string(status), "", last, last, last, "", opID, "", "", hb, int64(0), "", "", time.Time{}, time.Time{}}, nil
	})
	cols := strings.Split(strings.Join(strings.Fields(projectCols), ""), ",")
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"projects"}, cols, rows); err != nil {
		tb.Fatalf("copy %d projects: %v", n, err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE projects`); err != nil {
		tb.Fatal(err)
	}
}

func explain(tb testing.TB, s *Store, q string, args ...any) string {
	tb.Helper()
	rows, err := s.pool.Query(tb.Context(), "EXPLAIN "+q, args...)
	if err != nil {
		tb.Fatalf("EXPLAIN %s: %v", q, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// The sweep's selections read their partial indexes in order and stop at the limit: no scan of
// the whole fleet and no sort.
func TestSweepQueriesUseIndexes(t *testing.T) {
	s := openDSN(t, pgtest.Start(t))
	seedFleet(t, s, "fleet", fleetSize)
	cutoff := benchNow.Add(-30 * time.Minute)
	for _, tc := range []struct {
		name, query, index string
		args               []any
	}{
		{"IdleProjects limit 100", idleQuery + limitClause(100), "projects_idle", []any{cutoff, benchNow}},
		{"IdleProjects a week idle", idleQuery + limitClause(100), "projects_idle", []any{benchNow.Add(-7 * 24 * time.Hour), benchNow}},
		{"HeldProjects", `SELECT ` + projectCols + ` FROM projects WHERE op_id <> '' ORDER BY op_heartbeat, id`, "projects_held", nil},
	} {
		plan := explain(t, s, tc.query, tc.args...)
		if tc.index == "projects_held" {
			// Held projects are few and unlimited: the planner may fairly pick a bitmap scan
			// and sort them; what matters is that it never reads the whole fleet.
			if !strings.Contains(plan, "projects_held") || strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s: plan does not use %s:\n%s", tc.name, tc.index, plan)
			}
			continue
		}
		if !strings.Contains(plan, "Index Scan using "+tc.index) || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Sort") {
			t.Errorf("%s: plan does not read %s in order:\n%s", tc.name, tc.index, plan)
		}
	}
	got, err := s.IdleProjects(t.Context(), cutoff, benchNow, 100)
	if err != nil || len(got) != 100 {
		t.Fatalf("IdleProjects: %d projects, %v", len(got), err)
	}
	for i := 1; i < len(got); i++ {
		if got[i].LastActivity.Before(got[i-1].LastActivity) || got[i].Status != engine.StatusActive || got[i].OpID != "" {
			t.Fatalf("IdleProjects[%d] = %+v after %+v", i, got[i], got[i-1])
		}
	}
}

// BenchmarkIdleSelection times the hibernation sweep's selection over 100,000 projects.
func BenchmarkIdleSelection(b *testing.B) {
	s := openDSN(b, pgtest.Start(b))
	seedFleet(b, s, "fleet", fleetSize)
	cutoff := benchNow.Add(-30 * time.Minute)
	for b.Loop() {
		ps, err := s.IdleProjects(b.Context(), cutoff, benchNow, 100)
		if err != nil || len(ps) != 100 {
			b.Fatalf("IdleProjects: %d projects, %v", len(ps), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/selection")
}

// BenchmarkClaims is four sweeps claiming the same b.N idle projects, each starting at another
// quarter of the list: every project is claimed exactly once, the other attempts conflict.
func BenchmarkClaims(b *testing.B) {
	const claimers = 4
	s := openDSN(b, pgtest.Start(b))
	prefix := fmt.Sprintf("c%d", b.N)
	seedFleet(b, s, prefix, b.N)
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	cutoff := benchNow.Add(time.Hour)
	var won, lost atomic.Int64
	var failed error
	var mu sync.Mutex
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range claimers {
		wg.Go(func() {
			for k := range ids {
				id := ids[(k+w*len(ids)/claimers)%len(ids)]
				_, err := s.ClaimProject(b.Context(), id, engine.Claim{OpID: fmt.Sprintf("w%d-%d", w, k), Kind: engine.OpHibernate,
					Owner: "bench", Now: benchNow, From: []engine.ProjectStatus{engine.StatusActive},
					To: engine.StatusHibernating, IdleBefore: cutoff})
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, engine.ErrConflict):
					lost.Add(1)
				default:
					mu.Lock()
					failed = errors.Join(failed, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if failed != nil {
		b.Fatal(failed)
	}
	// Every claimable project (active, unheld) is claimed, and by one claimer.
	var held, left int64
	if err := s.pool.QueryRow(b.Context(), `SELECT count(*) FILTER (WHERE op_id LIKE 'w%'),
			count(*) FILTER (WHERE status = 'active' AND op_id = '')
		FROM projects WHERE id LIKE $1`, prefix+"-%").Scan(&held, &left); err != nil {
		b.Fatal(err)
	}
	if won.Load() != held || left != 0 {
		b.Fatalf("%d claims won, %d projects held by a claimer, %d left unclaimed", won.Load(), held, left)
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(won.Load())/secs, "claims/s")
	b.ReportMetric(float64(won.Load()+lost.Load())/secs, "attempts/s")
}
