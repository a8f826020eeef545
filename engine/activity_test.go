package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Every door a project is used through records itself with the activity, and the newest one is
// what the project says it was last used through.
func TestActivityRecordsItsSource(t *testing.T) {
	ctx := context.Background()
	clock := &shiftClock{}
	pt := openTest(t, t.TempDir(), "test-owner", func(c *engine.Config) { c.Clock = clock })
	source := func(want string) {
		t.Helper()
		p, err := pt.eng.Project(ctx, "busy")
		must(t, err)
		if p.LastActivitySource != want || p.LastActivityActor != "test-owner" {
			t.Fatalf("last activity through %q by %q, want %q by test-owner", p.LastActivitySource, p.LastActivityActor, want)
		}
	}
	// Each door a minute after the one before, so no two touches tie.
	step := func() { clock.add(time.Minute) }

	p, err := pt.eng.CreateProject(ctx, engine.CreateRequest{Name: "busy"})
	must(t, err)
	source(engine.SourceCreate)
	step()
	must(t, pt.eng.WriteFile(ctx, p.Slug, "app/main.sh", strings.NewReader("echo hi\n")))
	source(engine.SourceFiles)
	step()
	_, err = pt.eng.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "app", Directory: "app", Command: "sleep 600"})
	must(t, err)
	source(engine.SourceContainer)
	step()
	_, err = pt.eng.Exec(ctx, p.Slug, "app", engine.ExecRequest{Argv: []string{"true"}})
	must(t, err)
	source(engine.SourceExec)
	step()
	_, err = pt.eng.StartProject(ctx, p.Slug)
	must(t, err)
	source(engine.SourceStart)
	step()
	got, err := pt.eng.Touch(ctx, p.Slug, "ide")
	must(t, err)
	if got.LastActivitySource != "ide" {
		t.Fatalf("touch answered the project with its activity through %q, want ide", got.LastActivitySource)
	}
	step()
	_, err = pt.eng.Touch(ctx, p.Slug, "")
	must(t, err)
	source(engine.SourceTouch)

	for _, bad := range []string{"two words", "bell\a", strings.Repeat("x", 33)} {
		if _, err := pt.eng.Touch(ctx, p.Slug, bad); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("touch with source %q: %v, want ErrBadInput", bad, err)
		}
	}
	source(engine.SourceTouch)
}

// An open terminal (or any exec still running) is activity while it lasts, not only when it
// began: its heartbeat touches the project, so an hour in a shell is not an hour idle.
func TestOpenExecIsActivityWhileItLasts(t *testing.T) {
	ctx := context.Background()
	clock := &shiftClock{}
	// An op timeout of 4 s makes a use beat every second.
	pt := openTest(t, t.TempDir(), "test-owner", func(c *engine.Config) { c.Clock = clock; c.OpTimeout = 4 * time.Second })
	p, err := pt.eng.CreateProject(ctx, engine.CreateRequest{Name: "typing"})
	must(t, err)
	_, err = pt.eng.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "app", Directory: ".", Command: "sleep 600"})
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := pt.eng.Exec(ctx, p.Slug, "app", engine.ExecRequest{Argv: []string{"sleep", "4"}})
		done <- err
	}()
	// Let the exec begin, then let an hour pass on the engine's clock while it runs.
	deadline := time.Now().Add(10 * time.Second)
	for {
		uses, err := pt.store.ListUses(ctx, p.ID)
		must(t, err)
		if len(uses) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exec never began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	began := clock.Now()
	clock.add(time.Hour)
	time.Sleep(2 * time.Second) // two beats
	got, err := pt.eng.Project(ctx, p.Slug)
	must(t, err)
	if got.LastActivity.Before(began.Add(time.Hour)) || got.LastActivitySource != engine.SourceExec {
		t.Errorf("with the exec still running an hour later, last activity %s through %q (began %s); want the hour later, through exec",
			got.LastActivity.Format(time.RFC3339), got.LastActivitySource, began.Format(time.RFC3339))
	}
	must(t, <-done)
}
