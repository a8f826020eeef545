package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// A keep-alive holds the idle sweep off a project until it ends, counts as activity, and is
// bounded; a cancelled one holds nothing.
func TestKeepAliveHoldsTheSweepOff(t *testing.T) {
	ctx := context.Background()
	clock := &shiftClock{}
	pt := openTest(t, t.TempDir(), "test", func(c *engine.Config) { c.Clock = clock; c.MaxKeepAlive = 3 * time.Hour })
	enginetest.NewProject(t, pt.eng, "kept")
	enginetest.NewProject(t, pt.eng, "idle")
	enginetest.NewProject(t, pt.eng, "cancelled")

	for _, d := range []time.Duration{4 * time.Hour, 0, -time.Minute} {
		if _, err := pt.eng.KeepAlive(ctx, "kept", d); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("keep-alive for %s: %v, want ErrBadInput", d, err)
		}
	}
	p, err := pt.eng.KeepAlive(ctx, "kept", 2*time.Hour)
	must(t, err)
	if want := clock.Now().Add(2 * time.Hour); p.KeepAliveUntil.Sub(want).Abs() > time.Second || p.LastActivitySource != engine.SourceKeepAlive {
		t.Fatalf("kept alive until %s through %q, want about %s through keep-alive", p.KeepAliveUntil, p.LastActivitySource, want)
	}
	_, err = pt.eng.KeepAlive(ctx, "cancelled", 2*time.Hour)
	must(t, err)
	p, err = pt.eng.CancelKeepAlive(ctx, "cancelled")
	must(t, err)
	if !p.KeepAliveUntil.IsZero() {
		t.Fatalf("cancelled keep-alive still until %s", p.KeepAliveUntil)
	}

	// An hour on, all three have been idle past the timeout; only the keep-alive holds.
	clock.add(time.Hour)
	rep, err := pt.eng.SweepHibernate(ctx, engine.SweepOptions{Idle: 30 * time.Minute})
	must(t, err)
	if got := slugs(rep.Hibernated); len(got) != 2 || got[0] != "cancelled" || got[1] != "idle" || rep.Selected != 2 {
		t.Fatalf("sweep under a keep-alive: %+v", rep)
	}
	// Once it is over, the idle time counted from the keep-alive (activity) is long past.
	clock.add(90 * time.Minute)
	rep, err = pt.eng.SweepHibernate(ctx, engine.SweepOptions{Idle: 30 * time.Minute})
	must(t, err)
	if got := slugs(rep.Hibernated); len(got) != 1 || got[0] != "kept" {
		t.Fatalf("sweep after the keep-alive: %+v", rep)
	}
}

// keepingStore keeps one project alive (no activity with it) right after the sweep selected it.
type keepingStore struct {
	engine.Store
	slug  string
	until time.Time
}

func (s keepingStore) IdleProjects(ctx context.Context, before, asOf time.Time, limit int) ([]engine.Project, error) {
	ps, err := s.Store.IdleProjects(ctx, before, asOf, limit)
	for _, p := range ps {
		if p.Slug == s.slug {
			if _, kerr := s.Store.SetKeepAlive(ctx, p.ID, s.until, engine.Activity{}); kerr != nil {
				return nil, kerr
			}
		}
	}
	return ps, err
}

// Invariant 4 with keep-alives: one set after the sweep selected a project holds it off at the
// claim, and one set while its snapshot is taken puts it back before its environment goes.
func TestKeepAliveAfterSelection(t *testing.T) {
	ctx := context.Background()
	asOf := time.Now().Add(time.Hour)
	t.Run("before claim", func(t *testing.T) {
		pt := openTest(t, t.TempDir(), "test", func(c *engine.Config) {
			c.Store = keepingStore{Store: c.Store, slug: "kept", until: asOf.Add(time.Hour)}
		})
		enginetest.NewProject(t, pt.eng, "kept")
		rep, err := pt.eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: asOf})
		must(t, err)
		if len(rep.Hibernated) != 0 || len(rep.Skipped) != 1 {
			t.Fatalf("report: %+v", rep)
		}
		if p, _ := pt.eng.Project(ctx, "kept"); p.Status != engine.StatusActive {
			t.Fatalf("kept is %s", p.Status)
		}
		// Not claimed at all: its containers were never stopped for a snapshot.
		if snaps, err := pt.eng.Snapshots(ctx, "kept", true); err != nil || len(snaps) != 0 {
			t.Fatalf("a project kept alive before the claim was snapshotted: %v %+v", err, snaps)
		}
	})
	t.Run("during snapshot", func(t *testing.T) {
		var pt *parts
		pt = openTest(t, t.TempDir(), "test", func(c *engine.Config) {
			c.StepHook = func(kind engine.OpKind, step string) {
				if kind == engine.OpHibernate && step == "snapshot-ready" {
					p, err := pt.store.GetProject(ctx, "kept")
					if err == nil {
						_, err = pt.store.SetKeepAlive(ctx, p.ID, asOf.Add(time.Hour), engine.Activity{})
					}
					if err != nil {
						t.Errorf("keep alive: %v", err)
					}
				}
			}
		})
		enginetest.NewProject(t, pt.eng, "kept")
		rep, err := pt.eng.SweepHibernate(ctx, engine.SweepOptions{AsOf: asOf})
		must(t, err)
		if len(rep.Hibernated) != 0 || len(rep.Skipped) != 1 {
			t.Fatalf("report: %+v", rep)
		}
		if p, _ := pt.eng.Project(ctx, "kept"); p.Status != engine.StatusActive || p.OpID != "" {
			t.Fatalf("kept after the put-back: %+v", p)
		}
	})
}

func slugs(items []engine.SweepItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Slug
	}
	return out
}
