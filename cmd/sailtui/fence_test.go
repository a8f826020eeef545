package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
)

// Invariant 9: a write that sailtui acknowledged is in the project afterwards, or in the
// snapshot the operation took. Writers on one engine (a process) race hibernations, sweeps,
// restores and manual snapshots on another engine over the same store; every put and exec that
// returned success must be found afterwards. Each store gets the same rounds, since the fence
// lives in the store.

// slowReader hands out its content in pieces with pauses, as a put from a slow pipe does, so
// a put is still writing when an operation starts.
type slowReader struct {
	data  []byte
	pause time.Duration
}

func (r *slowReader) Read(b []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.pause)
	n := copy(b[:min(len(b), 1+len(r.data)/3)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// ackLog records the writes that were acknowledged: path -> content.
type ackLog struct {
	mu   sync.Mutex
	acks map[string]string
	n    atomic.Int64 // refused or failed writes, for the report
	// quiet, when set, makes the writers all pause together for 300 ms of every 1.3 s.
	quiet bool
}

func (a *ackLog) ack(path, content string) {
	a.mu.Lock()
	a.acks[path] = content
	a.mu.Unlock()
}

// write runs writers until stop closes: puts through a slow reader and execs that write after
// a pause; only those that returned success are recorded.
func (a *ackLog) write(t *testing.T, eng *engine.Engine, slug string, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			ctx := context.Background()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				content := fmt.Sprintf("writer %d write %d %x\n", w, k, rand.Uint64())
				if w == 2 {
					// exec: the write lands 40 ms after the command started.
					path := fmt.Sprintf("acks/e%d-%d", w, k)
					res, err := eng.Exec(ctx, slug, "web", engine.ExecRequest{Argv: []string{"sh", "-c",
						`sleep 0.04; mkdir -p acks && printf %s "$1" > "$2.tmp" && mv "$2.tmp" "$2"`, "sh", content, path}})
					if err == nil && res.ExitCode == 0 {
						a.ack(path, content)
					} else {
						a.n.Add(1)
					}
				} else {
					path := fmt.Sprintf("acks/p%d-%d", w, k)
					err := eng.WriteFile(ctx, slug, path, &slowReader{data: []byte(content), pause: 15 * time.Millisecond})
					if err == nil {
						a.ack(path, content)
					} else {
						a.n.Add(1)
					}
				}
				time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
				if a.quiet {
					if phase := time.Duration(time.Now().UnixNano()) % (1300 * time.Millisecond); phase >= time.Second {
						time.Sleep(1300*time.Millisecond - phase)
					}
				}
			}
		})
	}
	wg.Wait()
}

// missing lists the acknowledged writes that are in none of the trees.
func (a *ackLog) missing(trees ...string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for path, want := range a.acks {
		found := false
		for _, root := range trees {
			if b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path))); err == nil && string(b) == want {
				found = true
				break
			}
		}
		if !found {
			out = append(out, path)
		}
	}
	return out
}

// copyTree copies the regular files of src into a new temp directory (the tree as it is now).
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestFenceAcknowledgedWritesSurvive(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			var writers, ops *parts
			if store == "postgres" {
				dsn := pgtest.Start(t)
				writers = openPG(t, state, dsn, "writers")
				ops = openPG(t, state, dsn, "operator", func(c *engine.Config) { c.Store = lockless{c.Store} })
			} else {
				writers = openTest(t, state, "writers")
				ops = openTest(t, state, "operator", func(c *engine.Config) { c.Store = lockless{c.Store} })
			}
			for _, kind := range []string{"hibernate", "sweep", "restore", "snapshot"} {
				t.Run(kind, func(t *testing.T) { fenceRound(t, writers.eng, ops.eng, dirsOf(ops.runtime), kind) })
			}
		})
	}
}

func fenceRound(t *testing.T, writers, ops *engine.Engine, dirs projectDirs, kind string) {
	ctx := context.Background()
	p := newProject(t, writers, "fence-"+kind)
	if _, err := writers.AddContainer(ctx, p.Slug, engine.ContainerSpec{Name: "web", Directory: ".", Command: "sleep 600"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = ops.StopProject(context.Background(), p.Slug) })
	var before engine.Snapshot
	if kind == "restore" {
		var err error
		if before, err = ops.CreateSnapshot(ctx, p.Slug, "before the writers"); err != nil {
			t.Fatal(err)
		}
	}
	dir := dirs(p)
	// A sweep skips a project in use: the writers leave it idle now and then, as real ones do,
	// so that some sweeps find it idle (and hibernate it) and others find writes in flight.
	log := &ackLog{acks: map[string]string{}, quiet: kind == "sweep"}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { log.write(t, writers, p.Slug, stop); close(done) }()

	var safety []engine.Snapshot
	succeeded, goal := 0, 3
	if kind == "restore" {
		// Safety snapshots rotate (two are kept): each one must still be there to look into.
		goal = engine.DefaultKeepAuto
	}
	if kind == "sweep" {
		// Some sweeps land in a quiet moment and see no write in flight: more rounds.
		goal = 5
	}
	deadline := time.Now().Add(20 * time.Second)
	for succeeded < goal && time.Now().Before(deadline) {
		time.Sleep(time.Duration(100+rand.IntN(150)) * time.Millisecond)
		var err error
		switch kind {
		case "hibernate":
			if _, err = ops.Hibernate(ctx, p.Slug); err == nil {
				_, err = ops.Wake(ctx, p.Slug)
			}
		case "sweep":
			var rep engine.SweepReport
			rep, err = ops.SweepHibernate(ctx, engine.SweepOptions{AsOf: time.Now().Add(time.Hour)})
			if err == nil && len(rep.Failed) > 0 {
				err = fmt.Errorf("sweep failed: %+v", rep.Failed)
			}
			if err == nil && len(rep.Hibernated) == 0 {
				continue // in use at that moment: skipped, as it should be
			}
			if err == nil {
				_, err = ops.Wake(ctx, p.Slug)
			}
		case "restore":
			var res engine.RestoreResult
			if res, err = ops.RestoreSnapshot(ctx, p.Slug, before.ID); err == nil {
				safety = append(safety, res.Safety)
			}
		case "snapshot":
			_, err = ops.CreateSnapshot(ctx, p.Slug, "")
			if errors.Is(err, engine.ErrTimelineFull) {
				err = nil
			}
		}
		if err != nil && !errors.Is(err, engine.ErrBusy) {
			close(stop)
			<-done
			t.Fatalf("%s: %v", kind, err)
		}
		if err == nil {
			succeeded++
		}
	}
	close(stop)
	<-done
	if succeeded == 0 {
		t.Fatalf("no %s went through in 20 s while the writers ran", kind)
	}
	if len(log.acks) == 0 {
		t.Fatal("no write was acknowledged: the test proves nothing")
	}

	trees := []string{copyTree(t, dir)}
	// A restore puts the project back to the snapshot from before the writers: every write
	// acknowledged before it must be in the safety snapshot it took. Restore each safety
	// snapshot in turn and look there too.
	for _, s := range safety {
		if _, err := ops.RestoreSnapshot(ctx, p.Slug, s.ID); err != nil {
			t.Fatalf("restore safety snapshot %s: %v", s.ID, err)
		}
		trees = append(trees, copyTree(t, dir))
	}
	if miss := log.missing(trees...); len(miss) > 0 {
		t.Fatalf("%d of %d acknowledged writes were lost across %d %s(s) (%d refused): %s",
			len(miss), len(log.acks), succeeded, kind, log.n.Load(), strings.Join(miss[:min(len(miss), 10)], ", "))
	}
	t.Logf("%d acknowledged writes kept across %d %s(s); %d refused or stopped", len(log.acks), succeeded, kind, log.n.Load())
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
	p := newProject(t, writers, "long-exec")
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
	p := newProject(t, writers, "slow-put")
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

// The break as a user met it, with real processes: a slow `files put` that began before a
// `project hibernate` and exited 0 must find its file after the wake. The fence is in the
// store, so it holds between the two processes.
func TestFenceCLISlowPutAcrossHibernate(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "slow")
	observer := openTest(t, c.state, "observer")
	proj, err := observer.eng.Project(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 4 {
		path := fmt.Sprintf("uploads/f%d.txt", round)
		content := strings.Repeat(fmt.Sprintf("round %d ", round), 1000)
		pr, pw := io.Pipe()
		put := make(chan result, 1)
		go func() { put <- c.runIn(pr, nil, "files", "put", "slow", path) }()
		if _, err := pw.Write([]byte(content[:len(content)/2])); err != nil {
			t.Fatal(err)
		}
		// The put process holds its use before the hibernation starts.
		for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
			uses, err := observer.store.ListUses(context.Background(), proj.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(uses) > 0 {
				break
			}
			if time.Since(start) > 20*time.Second {
				t.Fatal("the put process never began its use")
			}
		}
		hib := make(chan result, 1)
		go func() { hib <- c.runIn(nil, []string{"SAILTUI_USE_WAIT=2s"}, "project", "hibernate", "slow") }()
		// Rounds alternate: the put ends inside the wait (hibernate goes ahead after it), or
		// outlasts the wait (hibernate refuses, or the put is stopped and fails).
		time.Sleep([]time.Duration{300 * time.Millisecond, 3 * time.Second}[round%2])
		_, _ = pw.Write([]byte(content[len(content)/2:]))
		_ = pw.Close()
		p, h := <-put, <-hib
		t.Logf("round %d: put exit %d (%s), hibernate exit %d (%s)", round, p.code, strings.TrimSpace(p.stderr), h.code, strings.TrimSpace(h.stderr))
		if h.code == 0 {
			c.ok("project", "wake", "slow")
		}
		if p.code != 0 {
			if !strings.Contains(p.stderr, "hibernate") {
				t.Errorf("round %d: the failed put does not say the hibernation stopped it: %s", round, p.stderr)
			}
			continue
		}
		if got := c.ok("files", "get", "slow", path); got != content {
			t.Fatalf("round %d: put exited 0 but the file holds %d bytes after hibernate (exit %d) and wake, want %d",
				round, len(got), h.code, len(content))
		}
	}
}

// The same rounds in docker mode: puts go to the project's host directory, execs run in the
// container, and hibernation removes the containers and the directory.
func TestDockerFenceAcknowledgedWritesSurvive(t *testing.T) {
	dcli := dockertest.Client(t)
	img := dockertest.Image(t, dcli)
	prefix := "sailtui-" + dockertest.Token(t, dcli)
	state := t.TempDir()
	de := openDockerEngine(t, state, img, prefix, nil)
	for _, kind := range []string{"hibernate", "sweep", "restore", "snapshot"} {
		t.Cleanup(func() { dockertest.RemoveLabelled(t, dcli, "sailtui.project=fence-"+kind) })
		t.Run(kind, func(t *testing.T) { fenceRound(t, de.eng, de.eng, dirsOf(de.runtime), kind) })
	}
}

// flakyEndUse fails the first EndUse calls, as a store that blinks does.
type flakyEndUse struct {
	engine.Store
	fails atomic.Int64
}

func (f *flakyEndUse) EndUse(ctx context.Context, projectID, useID string, touch time.Time) error {
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
	p := newProject(t, pt.eng, "blink")
	flaky.fails.Store(2)
	if err := pt.eng.WriteFile(context.Background(), p.Slug, "a.txt", strings.NewReader("a")); err != nil {
		t.Fatalf("put across a blink: %v", err)
	}
	if uses, err := pt.store.ListUses(context.Background(), p.ID); err != nil || len(uses) != 0 {
		t.Fatalf("uses left after the put: %+v %v", uses, err)
	}
}
