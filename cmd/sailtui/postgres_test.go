package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// openPG opens an engine on the embedded runtime with the PostgreSQL store at dsn.
func openPG(t *testing.T, state, dsn, owner string, tweaks ...func(*engine.Config)) *parts {
	t.Helper()
	cfg := testConfig(state)
	cfg.DatabaseURL = dsn
	return openConfig(t, cfg, owner, tweaks...)
}

// Four sweeps at once over 500 idle projects on one PostgreSQL: every project hibernated exactly
// once, one hibernation snapshot each, no deadlock, no error. The global lock is bypassed so the
// sweeps really overlap and only the claims keep them apart.
func TestPostgresFourSweeps(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Start(t)
	state := t.TempDir()
	const n = 500
	var ps []*parts
	for i := range 4 {
		ps = append(ps, openPG(t, state, dsn, fmt.Sprintf("sweeper-%d", i), func(c *engine.Config) { c.Store = enginetest.Lockless{Store: c.Store} }))
	}
	ctx := context.Background()
	for i := range n {
		if _, err := ps[0].eng.CreateProject(ctx, engine.CreateRequest{Name: fmt.Sprintf("p%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	asOf := time.Now().Add(time.Hour)
	reps := make([]engine.SweepReport, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { reps[i], errs[i] = p.eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: asOf, Concurrency: 8}) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("four sweeps did not finish: deadlock?")
	}
	total := 0
	for i := range ps {
		if errs[i] != nil || len(reps[i].Failed) > 0 {
			t.Fatalf("sweep %d: %v, failed %+v", i, errs[i], reps[i].Failed)
		}
		total += len(reps[i].Hibernated)
	}
	if total != n {
		t.Fatalf("hibernated %d in all, want %d", total, n)
	}
	projects, err := ps[0].store.ListProjects(ctx, engine.ProjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range projects {
		snaps, _ := ps[0].store.ListSnapshots(ctx, engine.SnapshotFilter{ProjectID: p.ID, IncludeDeleted: true})
		if p.Status != engine.StatusHibernated || len(snaps) != 1 {
			t.Errorf("%s: %s with %d snapshots, want hibernated with exactly one", p.Slug, p.Status, len(snaps))
		}
	}
}

// A console (here: `sailtui events`) connected to the same database sees a headless sweep in
// another process move a project hibernating → hibernated, live.
func TestPostgresEventsAcrossProcesses(t *testing.T) {
	dsn := pgtest.Start(t)
	c := newCLI(t)
	c.env = []string{"DATABASE_URL=" + dsn}
	c.ok("project", "create", "watched")

	w := watchEvents(t, c, dsn)
	c.headless("--sweep=hibernate", "--idle", "1ns")
	seen := map[string]time.Time{}
	deadline := time.Now().Add(5 * time.Second)
	for seen["hibernated"].IsZero() {
		e, ok := w.next(time.Until(deadline))
		if !ok {
			t.Fatalf("no hibernated event within 5s; saw %v", seen)
		}
		if e.Slug == "watched" {
			seen[string(e.To)] = time.Now()
			// Latency is a benchmark's business (timing in tests flakes on a loaded
			// machine); the log shows it.
			t.Logf("event %s→%s arrived %s after it happened", e.From, e.To, time.Since(e.Time))
		}
	}
	if seen["hibernating"].IsZero() {
		t.Fatalf("saw %v, want hibernating before hibernated", seen)
	}
}

// The database restarted mid-sweep: the sweep reports the projects it could not finish and
// fails; the next sweep converges, and no project is lost or left without a way forward.
func TestPostgresRestartMidSweep(t *testing.T) {
	ctx := context.Background()
	srv, err := pgtest.NewServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Remove() })
	dsn, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	var once sync.Once
	restarted := make(chan error, 1)
	a := openPG(t, state, dsn, "sweeper-a", func(c *engine.Config) {
		c.OpTimeout = time.Second
		c.SweepLockTTL = time.Second
		c.SweepConcurrency = 2
		c.StepHook = func(kind engine.OpKind, step string) {
			if kind == engine.OpHibernate && step == "snapshot-written" {
				once.Do(func() {
					if err := srv.Stop(); err != nil {
						restarted <- err
						return
					}
					go func() {
						time.Sleep(1500 * time.Millisecond)
						restarted <- srv.Start(context.Background())
					}()
				})
			}
		}
	})
	const n = 6
	for i := range n {
		newProject(t, a.eng, fmt.Sprintf("db%d", i))
	}
	rep, err := a.eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: time.Now().Add(time.Hour)})
	if err == nil && rep.OK() {
		t.Fatalf("a sweep across a database restart reported success: %+v", rep)
	}
	if err := <-restarted; err != nil {
		t.Fatalf("restart the database: %v", err)
	}
	t.Logf("first sweep: err=%v failed=%d hibernated=%d", err, len(rep.Failed), len(rep.Hibernated))
	// A later sweep (another process: another owner) finishes or rolls back what was cut off.
	b := openPG(t, state, dsn, "sweeper-b", func(c *engine.Config) { c.OpTimeout = time.Second; c.SweepLockTTL = time.Second })
	time.Sleep(1100 * time.Millisecond)
	for range 3 {
		rep, err = b.eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: time.Now().Add(time.Hour)})
		t.Logf("next sweep: err=%v lock=%s recovered=%d hibernated=%d failed=%v", err, rep.Lock, len(rep.Recovered), len(rep.Hibernated), rep.Failed)
		if err == nil && rep.OK() && rep.Lock == "acquired" && rep.Selected == 0 {
			break
		}
		time.Sleep(1100 * time.Millisecond)
	}
	projects, err := b.store.ListProjects(ctx, engine.ProjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range projects {
		if p.Status != engine.StatusHibernated || p.OpID != "" {
			t.Errorf("%s: %s held by %q, want hibernated and free", p.Slug, p.Status, p.OpKind)
			continue
		}
		if _, err := b.eng.Wake(ctx, p.Slug); err != nil {
			t.Errorf("wake %s: %v", p.Slug, err)
			continue
		}
		var buf strings.Builder
		if err := b.eng.ReadFile(ctx, p.Slug, "src/main.go", &buf); err != nil || !strings.Contains(buf.String(), p.Slug) {
			t.Errorf("%s lost its files: %q %v", p.Slug, buf.String(), err)
		}
	}
}
