package engine_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// The acknowledged-write rounds of invariant 9 (enginetest.FenceRound): writers in one engine,
// the operations in another over the same SQLite store, as two sailtui processes. cmd/sailtui
// runs the same rounds over PostgreSQL and in docker mode.
func TestFenceAcknowledgedWritesSurvive(t *testing.T) {
	state := t.TempDir()
	writers := openTest(t, state, "writers")
	ops := openTest(t, state, "operator", func(c *engine.Config) { c.Store = enginetest.Lockless{Store: c.Store} })
	for _, kind := range enginetest.FenceKinds {
		t.Run(kind, func(t *testing.T) { enginetest.FenceRound(t, writers.eng, ops.eng, ops.dirs(), kind) })
	}
}

// An exec still running when an operation must go ahead is stopped, and its caller gets an
// error that names the operation; while the operation holds the project, new file operations
// are refused with a message that names it.
func TestFenceStopsExecAndRefusesNewUses(t *testing.T) {
	state := t.TempDir()
	wp := openTest(t, state, "writers")
	writers := wp.eng
	ops := openTest(t, state, "operator", func(c *engine.Config) { c.UseWait = 3 * time.Second }).eng
	ctx := context.Background()
	p := enginetest.NewProject(t, writers, "long-exec")
	if _, err := writers.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "web", Directory: ".", Command: "sleep 600"}); err != nil {
		t.Fatal(err)
	}
	execErr := make(chan error, 1)
	var execRes engine.ExecResult
	go func() {
		var err error
		execRes, err = writers.Exec(ctx, p.Slug, "web", engine.ExecRequest{Argv: []string{"sh", "-c", "sleep 60; echo late > late.txt"}})
		execErr <- err
	}()
	// Wait until the exec holds its use.
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		uses, err := wp.store.ListUses(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(uses) == 1 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("exec never began its use")
		}
	}
	hib := make(chan error, 1)
	start := time.Now()
	go func() { _, err := ops.Hibernate(ctx, p.Slug); hib <- err }()
	// While the hibernation waits the exec out, a new put is refused and says why.
	var putErr error
	for range 100 {
		time.Sleep(20 * time.Millisecond)
		putErr = writers.WriteFile(ctx, p.Slug, "new.txt", strings.NewReader("x"))
		if putErr != nil {
			break
		}
	}
	if !errors.Is(putErr, engine.ErrBusy) || !strings.Contains(putErr.Error(), "hibernate is in progress") {
		t.Errorf("put during a hibernation: %v, want a refusal naming the hibernation", putErr)
	}
	select {
	case err := <-execErr:
		if err == nil || !strings.Contains(err.Error(), "hibernate of long-exec needs the project") {
			t.Errorf("stopped exec: err %v, result %+v; want an error naming the hibernation", err, execRes)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the exec was not stopped")
	}
	if err := <-hib; err != nil {
		t.Fatalf("hibernate after stopping the exec: %v", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("hibernate went ahead after %s: it must give the exec a grace period first", waited)
	}
	if _, err := ops.Wake(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := ops.ReadFile(ctx, p.Slug, "late.txt", &b); err == nil {
		t.Errorf("the stopped exec still wrote late.txt (%q)", b.String())
	}
	if _, err := ops.StopProject(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
}

// A put that does not end within the wait makes the operation refuse, changing nothing; the put
// then completes and is kept.
func TestFenceRefusesWhenUseOutlastsWait(t *testing.T) {
	state := t.TempDir()
	writers := openTest(t, state, "writers").eng
	ops := openTest(t, state, "operator", func(c *engine.Config) { c.UseWait = 900 * time.Millisecond }).eng
	ctx := context.Background()
	p := enginetest.NewProject(t, writers, "slow-put")
	pr, pw := io.Pipe()
	putErr := make(chan error, 1)
	go func() { putErr <- writers.WriteFile(ctx, p.Slug, "big.txt", pr) }()
	if _, err := pw.Write([]byte("first half ")); err != nil {
		t.Fatal(err)
	}
	_, err := ops.CreateSnapshot(ctx, p.Slug, "under a put")
	if !errors.Is(err, engine.ErrBusy) || !strings.Contains(err.Error(), "still in use by files put") {
		t.Fatalf("snapshot under a put that does not end: %v, want a refusal naming the put", err)
	}
	// Asked to stop, the put was cancelled: it reports failure, so nothing unkept was acknowledged.
	_, _ = pw.Write([]byte("second half"))
	_ = pw.Close()
	if err := <-putErr; err == nil {
		var b strings.Builder
		_ = ops.ReadFile(ctx, p.Slug, "big.txt", &b)
		if b.String() != "first half second half" {
			t.Fatalf("put succeeded but the file holds %q", b.String())
		}
	}
	got, err := ops.Project(ctx, p.Slug)
	if err != nil || got.Status != engine.StatusActive || got.OpID != "" {
		t.Fatalf("after the refused snapshot: %+v %v", got, err)
	}
	if _, err := ops.CreateSnapshot(ctx, p.Slug, "after the put"); err != nil {
		t.Fatalf("snapshot once the put is done: %v", err)
	}
}

// flakyEndUse fails the first EndUse calls, as a store that blinks does.
type flakyEndUse struct {
	engine.Store
	fails atomic.Int64
}

func (f *flakyEndUse) EndUse(ctx context.Context, projectID, useID string, touch engine.Activity) error {
	if f.fails.Add(-1) >= 0 {
		return errors.New("store blinked")
	}
	return f.Store.EndUse(ctx, projectID, useID, touch)
}

// A store that blinks as a put ends does not leave its use behind to hold operations off.
func TestFenceEndUseRidesOutABlink(t *testing.T) {
	state := t.TempDir()
	var flaky *flakyEndUse
	pt := openTest(t, state, "console", func(c *engine.Config) {
		flaky = &flakyEndUse{Store: c.Store}
		c.Store = flaky
	})
	p := enginetest.NewProject(t, pt.eng, "blink")
	flaky.fails.Store(2)
	if err := pt.eng.WriteFile(context.Background(), p.Slug, "a.txt", strings.NewReader("a")); err != nil {
		t.Fatalf("put across a blink: %v", err)
	}
	if uses, err := pt.store.ListUses(context.Background(), p.ID); err != nil || len(uses) != 0 {
		t.Fatalf("uses left after the put: %+v %v", uses, err)
	}
}
