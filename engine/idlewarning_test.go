package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// The idle warning (issue 35): a project that will be idle past the timeout within the warning
// window gets one idle_warning event, and is hibernated only once that warning is as old as the
// window; activity after the warning makes it void, and a project found long idle by a sweep
// that was missed is warned first, not hibernated at once. Time is the engine's clock.
func TestIdleWarningComesFirst(t *testing.T) {
	ctx := context.Background()
	clock := &shiftClock{}
	pt := openTest(t, t.TempDir(), "test", func(c *engine.Config) {
		c.Clock = clock
		c.IdleTimeout = 30 * time.Minute
		c.IdleWarning = 5 * time.Minute
	})
	events, err := pt.eng.Subscribe(t.Context())
	must(t, err)
	warnings := func() []string {
		var got []string
		for {
			select {
			case ev := <-events:
				if ev.Kind == engine.EventIdleWarning {
					got = append(got, ev.Slug)
				}
			default:
				return got
			}
		}
	}
	sweep := func(after time.Duration) engine.SweepReport {
		t.Helper()
		clock.add(after)
		rep, err := pt.eng.SweepHibernate(ctx, engine.SweepOptions{})
		must(t, err)
		return rep
	}
	status := func(slug string) engine.ProjectStatus {
		t.Helper()
		p, err := pt.eng.Project(ctx, slug)
		must(t, err)
		return p.Status
	}
	enginetest.NewProject(t, pt.eng, "quiet")
	enginetest.NewProject(t, pt.eng, "used")
	warnings() // creating published events of its own

	// 24 minutes idle: more than 5 minutes from the timeout, no warning yet.
	if rep := sweep(24 * time.Minute); len(rep.Warned) != 0 || len(warnings()) != 0 {
		t.Fatalf("warned 6 minutes before the window: %+v", rep)
	}
	// 26 minutes idle: both will be idle past the timeout within 5 minutes.
	rep := sweep(2 * time.Minute)
	if got := slugs(rep.Warned); len(got) != 2 || got[0] != "quiet" || got[1] != "used" || len(rep.Hibernated) != 0 {
		t.Fatalf("sweep in the window: %+v", rep)
	}
	if got := warnings(); len(got) != 2 {
		t.Fatalf("idle_warning events: %v, want one for each project", got)
	}
	p, err := pt.eng.Project(ctx, "quiet")
	must(t, err)
	if !p.IdleWarned() {
		t.Fatalf("the warning is not recorded: %+v", p)
	}
	// A sweep inside the window warns nobody again.
	if rep := sweep(time.Minute); len(rep.Warned) != 0 || len(warnings()) != 0 || len(rep.Hibernated) != 0 {
		t.Fatalf("second sweep in the window: %+v", rep)
	}
	// Activity after the warning makes it void.
	_, err = pt.eng.Touch(ctx, "used", "ide")
	must(t, err)
	// 31 minutes idle, warned 5 minutes ago: quiet goes; used is not idle.
	rep = sweep(4 * time.Minute)
	if got := slugs(rep.Hibernated); len(got) != 1 || got[0] != "quiet" || len(rep.Warned) != 0 {
		t.Fatalf("sweep once the warning is 5 minutes old: %+v", rep)
	}
	if status("quiet") != engine.StatusHibernated || status("used") != engine.StatusActive {
		t.Fatalf("quiet is %s, used is %s", status("quiet"), status("used"))
	}

	// Sweeps missed for two hours: used is long idle and its old warning is void. The sweep
	// that finds it warns it and leaves it; the one after the window hibernates it.
	rep = sweep(2 * time.Hour)
	if got := slugs(rep.Warned); len(got) != 1 || got[0] != "used" || len(rep.Hibernated) != 0 || status("used") != engine.StatusActive {
		t.Fatalf("first sweep after a missed hour: %+v", rep)
	}
	if got := warnings(); len(got) != 1 || got[0] != "used" {
		t.Fatalf("idle_warning events after the missed sweeps: %v", got)
	}
	if rep := sweep(4 * time.Minute); len(rep.Hibernated) != 0 || status("used") != engine.StatusActive {
		t.Fatalf("hibernated 4 minutes after its warning: %+v", rep)
	}
	if rep := sweep(time.Minute); len(rep.Hibernated) != 1 || status("used") != engine.StatusHibernated {
		t.Fatalf("sweep 5 minutes after the warning: %+v", rep)
	}
}
