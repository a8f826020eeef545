package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Fencing (issue 30): a holder paused rather than dead (SIGSTOP, a frozen node, a partition
// from the store) is taken over after SAILTUI_OP_TIMEOUT and its operation finished by another
// process. When it resumes it must stop at its next fenced write and touch nothing: no
// acknowledged write lost, no snapshot lost, no sixth manual snapshot, the project as the
// taker left it, and the resumed call failing with ErrSuperseded.

// PausePoint is where a superseded round pauses the holder: after a journaled step of Kind
// (Step), or inside a volume's long call at a progress phase (Phase: the extraction of a
// restore, the archive walk of a snapshot), past the checks made before the call.
//
// WhileTaken resumes the holder while the taker still holds the operation (paused at its
// first step after the take-over): both then carry the same operation id, and only the epoch
// tells them apart.
type PausePoint struct {
	Kind       engine.OpKind
	Step       string
	Phase      string
	WhileTaken bool
}

func (pt PausePoint) String() string {
	s := string(pt.Kind) + "/" + pt.Step
	if pt.Phase != "" {
		s = string(pt.Kind) + "/in-" + pt.Phase
	}
	if pt.WhileTaken {
		s += "-while-taken"
	}
	return s
}

// Name is the name of the round's project (its slug is engine.Slugify of it).
func (pt PausePoint) Name() string { return strings.ReplaceAll("sup-"+pt.String(), "/", "-") }

// PausePoints are every journaled step of hibernate, wake, restore, manual snapshot and
// delete, and the volume phases where a long call can be caught.
var PausePoints = []PausePoint{
	{Kind: engine.OpHibernate, Step: "claimed"},
	{Kind: engine.OpHibernate, Step: "stopped"},
	{Kind: engine.OpHibernate, Step: "snapshot-pending"},
	{Kind: engine.OpHibernate, Step: "snapshot-written"},
	{Kind: engine.OpHibernate, Step: "snapshot-ready"},
	{Kind: engine.OpHibernate, Step: "torn-down"},
	{Kind: engine.OpWake, Step: "claimed"},
	{Kind: engine.OpWake, Step: "restoring"},
	{Kind: engine.OpWake, Phase: "extract"},
	{Kind: engine.OpWake, Step: "restored"},
	{Kind: engine.OpWake, Step: "started"},
	{Kind: engine.OpRestore, Step: "claimed"},
	{Kind: engine.OpRestore, Step: "target"},
	{Kind: engine.OpRestore, Step: "snapshot-pending"},
	{Kind: engine.OpRestore, Step: "snapshot-ready"},
	{Kind: engine.OpRestore, Step: "stopped"},
	{Kind: engine.OpRestore, Phase: "extract"},
	{Kind: engine.OpRestore, Step: "restored"},
	{Kind: engine.OpRestore, Step: "started"},
	{Kind: engine.OpSnapshot, Step: "claimed"},
	{Kind: engine.OpSnapshot, Step: "snapshot-pending"},
	{Kind: engine.OpSnapshot, Phase: "archive"},
	{Kind: engine.OpSnapshot, Step: "snapshot-written"},
	{Kind: engine.OpSnapshot, Step: "snapshot-ready"},
	{Kind: engine.OpDelete, Step: "claimed"},
	{Kind: engine.OpDelete, Step: "snapshot-pending"},
	{Kind: engine.OpDelete, Step: "snapshot-ready"},
	{Kind: engine.OpDelete, Step: "torn-down"},
	{Kind: engine.OpHibernate, Step: "snapshot-written", WhileTaken: true},
	{Kind: engine.OpWake, Step: "restoring", WhileTaken: true},
	{Kind: engine.OpRestore, Step: "stopped", WhileTaken: true},
	{Kind: engine.OpDelete, Step: "snapshot-ready", WhileTaken: true},
}

// TakerOpTimeout is the operation timeout of a round's taker: the holder's operation is stale
// to it once the holder was paused this long.
const TakerOpTimeout = 100 * time.Millisecond

// SupersededParts wire a round: two processes over one store.
type SupersededParts struct {
	// Holder opens another engine over the same store and runtime, calling hook after every
	// journaled step, with the default operation timeout (its own holds are never stale to it).
	Holder func(t *testing.T, hook func(engine.OpKind, string)) *engine.Engine
	// Taker opens an engine over the same store with TakerOpTimeout as its operation timeout,
	// so the paused holder's operation is stale to it soon, calling hook after every step; the
	// store is its, for the round to read the journal.
	Taker func(t *testing.T, hook func(engine.OpKind, string)) (*engine.Engine, engine.Store)
}

// SupersededRound pauses the holder at pt, lets the taker take the operation over and finish it
// (a sweep for a hibernation, a wake for a wake or a manual snapshot, doctor --fix for a
// restore or a delete), writes through the taker as a user would, resumes the holder and checks
// what it left.
func SupersededRound(t *testing.T, parts SupersededParts, pt PausePoint) {
	ctx := context.Background()
	// Armed once the project is set up: the taker then pauses at its first step (WhileTaken).
	var takerArmed, takerPaused atomic.Bool
	takerReached, takerResume := make(chan struct{}), make(chan struct{})
	taker, store := parts.Taker(t, func(engine.OpKind, string) {
		if takerArmed.Load() && takerPaused.CompareAndSwap(false, true) {
			close(takerReached)
			<-takerResume
		}
	})
	slug := pt.Name()
	p := NewProject(t, taker, slug)
	if _, err := taker.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "web", Directory: ".", Command: "sleep 600"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = taker.StopProject(context.Background(), p.Slug) })
	if _, err := taker.StartProject(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	acks := map[string]string{}
	put := func(path, content string) {
		t.Helper()
		if err := taker.WriteFile(ctx, p.Slug, path, strings.NewReader(content)); err != nil {
			t.Fatalf("files put %s: %v", path, err)
		}
		acks[path] = content
	}
	put("before.txt", "written before the operation\n")
	var target engine.Snapshot
	switch pt.Kind {
	case engine.OpWake:
		mustDo(t, "hibernate", func() error { _, err := taker.Hibernate(ctx, p.Slug); return err })
	case engine.OpRestore:
		mustDo(t, "target snapshot", func() (err error) { target, err = taker.CreateSnapshot(ctx, p.Slug, "target"); return err })
	case engine.OpSnapshot:
		// Four of five slots taken: the paused snapshot would be the fifth.
		for i := range engine.MaxManualSnapshots - 1 {
			mustDo(t, "snapshot", func() error { _, err := taker.CreateSnapshot(ctx, p.Slug, fmt.Sprintf("s%d", i)); return err })
		}
	}

	var paused atomic.Bool
	reached, resume := make(chan struct{}), make(chan struct{})
	pause := func() {
		if paused.CompareAndSwap(false, true) {
			close(reached)
			<-resume
		}
	}
	holder := parts.Holder(t, func(k engine.OpKind, step string) {
		if pt.Step != "" && k == pt.Kind && step == pt.Step {
			pause()
		}
	})
	hctx := ctx
	if pt.Phase != "" {
		hctx = engine.WithProgress(ctx, func(pr engine.Progress) {
			if pr.Op == pt.Kind && pr.Phase == pt.Phase {
				pause()
			}
		})
	}
	errc := make(chan error, 1)
	go func() {
		var err error
		switch pt.Kind {
		case engine.OpHibernate:
			_, err = holder.Hibernate(hctx, p.Slug)
		case engine.OpWake:
			_, err = holder.Wake(hctx, p.Slug)
		case engine.OpRestore:
			_, err = holder.RestoreSnapshot(hctx, p.Slug, target.ID)
		case engine.OpSnapshot:
			_, err = holder.CreateSnapshot(hctx, p.Slug, "paused")
		case engine.OpDelete:
			_, err = holder.DeleteProject(hctx, p.Slug)
		}
		errc <- err
	}()
	resumed := false
	resumeHolder := func() error {
		t.Helper()
		close(resume)
		resumed = true
		select {
		case err := <-errc:
			return err
		case <-time.After(3 * time.Minute):
			t.Fatalf("the resumed %s did not end in 3 minutes", pt.Kind)
			return nil
		}
	}
	defer func() {
		if !resumed {
			close(resume)
			<-errc
		}
	}()
	select {
	case <-reached:
	case err := <-errc:
		resumed = true
		t.Fatalf("%s ended before it reached %s: %v", pt.Kind, pt, err)
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s did not reach %s in 3 minutes", pt.Kind, pt)
	}
	// Silent past the taker's operation timeout (TakerOpTimeout).
	time.Sleep(2 * TakerOpTimeout)

	// The taker finishes (or rolls back) the paused operation, then a user works on.
	live := p.Slug
	takeOver := func() error {
		switch pt.Kind {
		case engine.OpHibernate:
			rep, err := taker.SweepHibernate(ctx, engine.SweepOptions{Idle: 24 * time.Hour})
			if err != nil || len(rep.Recovered) != 1 {
				return fmt.Errorf("sweep as the taker: %+v, %v; want the paused hibernation recovered", rep, err)
			}
		case engine.OpWake, engine.OpSnapshot:
			if _, err := taker.Wake(ctx, p.Slug); err != nil {
				return fmt.Errorf("wake as the taker: %w", err)
			}
		case engine.OpRestore, engine.OpDelete:
			rep, err := taker.Doctor(ctx, true)
			if err != nil || !slices.ContainsFunc(rep.Findings, func(f engine.Finding) bool { return f.Check == "stuck-operation" && f.Fixed }) {
				return fmt.Errorf("doctor --fix as the taker: %+v, %v; want the paused %s finished", rep, err, pt.Kind)
			}
		}
		return nil
	}
	takerDone := make(chan error, 1)
	takerArmed.Store(pt.WhileTaken)
	go func() { takerDone <- takeOver() }()
	var holderErr error
	if pt.WhileTaken {
		select {
		case <-takerReached:
		case err := <-takerDone:
			t.Fatalf("the taker ended before it journaled a step: %v", err)
		case <-time.After(3 * time.Minute):
			t.Fatal("the taker did not reach a step in 3 minutes")
		}
		// Both now carry the operation's id; the holder goes on while the taker holds it.
		holderErr = resumeHolder()
		close(takerResume)
	}
	if err := <-takerDone; err != nil {
		t.Fatal(err)
	}
	if pt.Kind == engine.OpHibernate {
		mustDo(t, "wake after the taken-over hibernation", func() error { _, err := taker.Wake(ctx, p.Slug); return err })
	}
	if pt.Kind == engine.OpDelete {
		if cur, err := taker.Project(ctx, p.Slug); err == nil && cur.Status != engine.StatusDeleted {
			t.Fatalf("after the taker: %s is %s, want deleted", p.Slug, cur.Status)
		}
		// What the issue saw: a new project of the same name, whose tree the resumed delete
		// destroyed.
		again := NewProject(t, taker, slug)
		if again.Slug != p.Slug {
			t.Fatalf("the new project is %s, want the slug %s again", again.Slug, p.Slug)
		}
		acks = map[string]string{"src/main.go": "package main // " + slug + "\n"}
	}
	if pt.Kind == engine.OpSnapshot {
		// The slot a rolled-back snapshot freed is taken by the user (refused when the paused one
		// was already ready: the timeline is full then, as it should be).
		// A holder paused in the middle of its walk still has the containers paused (its pause
		// ends with it or when it goes on): the user's snapshot waits for that, as any would.
		if _, err := taker.CreateSnapshot(ctx, live, "after the take-over"); err != nil && !errors.Is(err, engine.ErrTimelineFull) &&
			!(pt.Phase == "archive" && errors.Is(err, engine.ErrBusy)) {
			t.Fatalf("snapshot after the take-over: %v", err)
		}
	}
	put("after-takeover.txt", "acknowledged after the take-over\n")

	err := holderErr
	if !pt.WhileTaken {
		err = resumeHolder()
	}
	if !errors.Is(err, engine.ErrSuperseded) {
		t.Errorf("the resumed %s returned %v, want ErrSuperseded", pt.Kind, err)
	} else if !strings.Contains(err.Error(), "took the operation over") {
		t.Errorf("the resumed %s's error does not say what happened: %v", pt.Kind, err)
	}

	// Every acknowledged write is in the project, which is active and held by nobody.
	cur, gerr := taker.Project(ctx, live)
	if gerr != nil || cur.Status != engine.StatusActive || cur.OpID != "" {
		t.Fatalf("after the resumed holder: %s is %+v, %v; want active and free", live, cur, gerr)
	}
	for path, want := range acks {
		var b strings.Builder
		if err := taker.ReadFile(ctx, live, path, &b); err != nil || b.String() != want {
			t.Errorf("acknowledged write %s: %q, %v; want %q", path, b.String(), err, want)
		}
	}
	// No operation left running; no ready snapshot without its archive; the timeline's limit.
	ops, lerr := store.ListOps(ctx, cur.ID, 0)
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, op := range ops {
		if op.State == engine.OpRunning {
			t.Errorf("journal entry %s (%s at %s) is still running", op.ID, op.Kind, op.Step)
		}
	}
	rep, derr := taker.Doctor(ctx, false)
	if derr != nil {
		t.Fatal(derr)
	}
	for _, f := range rep.Findings {
		// Other rounds may share the store (not their objects): only this project's count.
		if f.Project == live && (f.Check == "missing-archive" || f.Check == "stuck-operation") {
			t.Errorf("doctor after the resumed holder: %s: %s", f.Check, f.Detail)
		}
	}
	snaps, serr := taker.Snapshots(ctx, live, false)
	if serr != nil {
		t.Fatal(serr)
	}
	manual := 0
	for _, s := range snaps {
		if s.Type == engine.SnapshotManual {
			manual++
		}
	}
	if manual > engine.MaxManualSnapshots {
		t.Errorf("%d manual snapshots on the timeline, the limit is %d", manual, engine.MaxManualSnapshots)
	}
	restored := slices.ContainsFunc(ops, func(op engine.Operation) bool { return op.Kind == engine.OpRestore && op.State == engine.OpDone })
	if pt.Kind == engine.OpRestore && restored {
		// The restore the taker finished can still be undone: its safety snapshot is ready.
		if !slices.ContainsFunc(snaps, func(s engine.Snapshot) bool {
			return s.Type == engine.SnapshotSafety && s.Status == engine.SnapshotReady
		}) {
			t.Errorf("no ready safety snapshot after the restore: %+v", snaps)
		}
	}
	if pt.Kind == engine.OpDelete {
		// The removed project's final snapshot is kept: it comes back once its name is free.
		mustDo(t, "remove the new project", func() error { _, err := taker.DeleteProject(ctx, live); return err })
		mustDo(t, "undelete the first project", func() error { _, err := taker.UndeleteProject(ctx, p.ID); return err })
		mustDo(t, "wake the first project", func() error { _, err := taker.Wake(ctx, p.ID); return err })
		var b strings.Builder
		if err := taker.ReadFile(ctx, p.ID, "before.txt", &b); err != nil || b.String() != "written before the operation\n" {
			t.Errorf("the removed project came back without its files: before.txt %q, %v", b.String(), err)
		}
	}
}

func mustDo(t *testing.T, what string, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
