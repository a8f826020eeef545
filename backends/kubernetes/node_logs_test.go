package kubernetes_test

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/runtimetest"
)

// With a bucket for logs (what S3_BUCKET_NAME gives), a container's log outlives its pod and
// namespace: after a hibernation and a wake it holds the first run's lines, the markers of the
// stop, the hibernation and the wake, then the new run's, in order; a follow opened while the
// project is hibernated delivers the woken pod's lines; the log goes with the project, and no
// archive listing sees it.
func TestNodeLogsSurviveHibernation(t *testing.T) {
	n := k8stest.StartNode(t)
	store := newS3Store(t)
	rt := newNodeRuntime(t, n, func(c *kubernetes.Config) { c.Logs, c.LogPrefix = store, "projects-logs/" })
	eng, err := engine.New(engine.Config{Store: newStore(t), Runtime: rt, Volumes: kubernetes.NewArchiveVolumes(rt, store, archive.SandwichOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: "Logs Survive", Owner: "alice@example.com",
		Containers: []engine.ContainerSpec{{Name: "web", Directory: "web", Port: 8080, Command: `echo "hello from $HOSTNAME"; ` + serveCommand}}})
	if err != nil {
		t.Fatal(err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_, _ = eng.DeleteProject(context.WithoutCancel(t.Context()), p.ID)
		}
	})
	if _, err := eng.StartProject(ctx, p.ID); err != nil {
		t.Fatalf("start: %v", err)
	}
	read := runtimetest.ReadLog(t)
	readAll := func() string { return read(eng.Logs(ctx, p.ID, "web", engine.LogOptions{})) }
	var first string
	waitFor(t, "the first run's greeting", func() bool {
		for line := range strings.Lines(readAll()) {
			if strings.HasPrefix(line, "hello from ") {
				first = line
				return true
			}
		}
		return false
	})

	if desc, err := eng.Describe(ctx, p.ID); err != nil || !strings.Contains(desc, "logs: kept across stops and hibernation in s3://") {
		t.Errorf("describe does not say where the logs are kept (%v):\n%s", err, desc)
	}
	if _, err := eng.Hibernate(ctx, p.ID); err != nil {
		t.Fatalf("hibernate: %v", err)
	}
	stopped, hib, woke := engine.LogMarker(engine.LogMarkStopped), engine.LogMarker(engine.LogMarkHibernated), engine.LogMarker(engine.LogMarkWoke)
	if got := readAll(); !runtimetest.InOrder(got, first, stopped, hib) {
		t.Fatalf("log of the hibernated project = %q, want %q, then %q and %q", got, first, stopped, hib)
	}

	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc, err := eng.Logs(fctx, p.ID, "web", engine.LogOptions{Follow: true, Tail: -1})
	if err != nil {
		t.Fatalf("follow the log of a hibernated project: %v", err)
	}
	defer rc.Close()
	followed := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			followed <- sc.Text() + "\n"
		}
		close(followed)
	}()
	if _, err := eng.Wake(ctx, p.ID); err != nil {
		t.Fatalf("wake: %v", err)
	}
	var second string
	timeout := time.After(2 * time.Minute)
	for second == "" {
		select {
		case l, ok := <-followed:
			if !ok {
				t.Fatal("follow ended before the woken pod's greeting")
			}
			if l == first {
				t.Fatalf("follow with Tail -1 delivered the old line %q", l)
			}
			if strings.HasPrefix(l, "hello from ") {
				second = l
			}
		case <-timeout:
			t.Fatal("a follow opened while hibernated did not deliver the woken pod's greeting in 2 minutes")
		}
	}
	cancel()
	if got := readAll(); !runtimetest.InOrder(got, first, stopped, hib, woke, second) {
		t.Errorf("log after the wake = %q, want %q, the markers %q %q %q, then %q", got, first, stopped, hib, woke, second)
	}

	if _, err := eng.DeleteProject(ctx, p.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	deleted = true
	left, err := store.List(ctx, "projects-logs/")
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("kept log objects left after the project was deleted: %v", left)
	}
}

// waitFor polls cond for up to two minutes (a pod's first log line on a loaded node).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
