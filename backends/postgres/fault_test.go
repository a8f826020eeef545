package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
)

// slowCall is longer than any store call may take while the server is down: refused
// connections must fail fast, not hang.
const slowCall = 5 * time.Second

// TestDatabaseRestart restarts the server under load: calls fail with wrapped errors that are
// not mistaken for engine outcomes, then work again through the same pool, and the notifier
// listens again.
func TestDatabaseRestart(t *testing.T) {
	srv, err := pgtest.NewServer(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Remove(); err != nil {
			t.Error(err)
		}
	})
	dsn, err := srv.CreateDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	a, b := startProcess(t, dsn), startProcess(t, dsn)
	p := engine.Project{ID: "p1", Slug: "survivor", Status: engine.StatusActive}
	if err := a.store.CreateProject(t.Context(), p, nil, nil); err != nil {
		t.Fatal(err)
	}

	load := startLoad(t, a.store, p.ID)
	load.waitOK(t, "before the restart")
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	load.waitFailure(t)
	checkDownErrors(t, a.store, p.ID)

	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	load.waitOK(t, "after the restart")
	load.stop(t)

	if _, ok := recv(t, b.events, 10*time.Second, func(e engine.Event) bool { return e.Kind == KindResync }); !ok {
		t.Fatal("notifier sent no resync event within 10s of the restart")
	}
	if err := a.notifier.Publish(t.Context(), engine.Event{Slug: "back", Kind: "status"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := recv(t, b.events, time.Second, bySlug("back")); !ok {
		t.Fatal("event published after the restart not delivered within 1s")
	}
}

// checkDownErrors calls the store while the server is down.
func checkDownErrors(t *testing.T, s *Store, projectID string) {
	t.Helper()
	ctx := t.Context()
	_, err := s.GetProject(ctx, projectID)
	checkDown(t, "GetProject", "get project "+projectID, err)
	_, err = s.ClaimProject(ctx, projectID, engine.Claim{OpID: "op-down", Kind: engine.OpHibernate, Now: time.Now(),
		From: []engine.ProjectStatus{engine.StatusActive}, To: engine.StatusHibernating})
	checkDown(t, "ClaimProject", "claim project "+projectID, err)
	ok, err := s.TryLock(ctx, "sweep", "me", time.Now(), time.Minute)
	checkDown(t, "TryLock", `lock "sweep"`, err)
	if ok {
		t.Error("TryLock succeeded with the server down")
	}
	checkDown(t, "InsertSnapshot", "insert snapshot", s.InsertSnapshot(ctx, engine.Snapshot{ID: "s1", ProjectID: projectID,
		Type: engine.SnapshotManual, Status: engine.SnapshotPending}, 5, engine.Hold{}))
}

func checkDown(t *testing.T, what, prefix string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s with the server down succeeded", what)
	case !strings.HasPrefix(err.Error(), prefix):
		t.Errorf("%s with the server down: %q does not say what failed (%q)", what, err, prefix)
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrConflict), errors.Is(err, engine.ErrExists),
		errors.Is(err, engine.ErrBadInput), errors.Is(err, engine.ErrTimelineFull):
		t.Errorf("%s with the server down: %v is taken for an engine outcome", what, err)
	}
}

// load runs store calls from several goroutines until stopped, recording outcomes.
type load struct {
	ok, failed atomic.Int64
	slowest    atomic.Int64 // nanoseconds
	lastErr    atomic.Value
	done       chan struct{}
	wg         sync.WaitGroup
}

func startLoad(t *testing.T, s *Store, projectID string) *load {
	l := &load{done: make(chan struct{})}
	for w := range 4 {
		l.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-l.done:
					return
				default:
				}
				start := time.Now()
				err := l.call(t.Context(), s, projectID, w, i)
				if d := time.Since(start); d > time.Duration(l.slowest.Load()) {
					l.slowest.Store(int64(d))
				}
				if err != nil {
					l.failed.Add(1)
					l.lastErr.Store(err)
					time.Sleep(10 * time.Millisecond)
				} else {
					l.ok.Add(1)
				}
			}
		})
	}
	return l
}

func (l *load) call(ctx context.Context, s *Store, projectID string, w, i int) error {
	switch (w + i) % 3 {
	case 0:
		_, err := s.GetProject(ctx, projectID)
		return err
	case 1:
		return s.Touch(ctx, projectID, engine.Activity{At: time.Now(), Source: engine.SourceTouch})
	default:
		_, err := s.TryLock(ctx, fmt.Sprintf("lock-%d", w), "load", time.Now(), time.Minute)
		return err
	}
}

// waitOK waits for a run of successful calls.
func (l *load) waitOK(t *testing.T, when string) {
	t.Helper()
	from := l.ok.Load()
	for deadline := time.Now().Add(15 * time.Second); l.ok.Load() < from+20; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("store calls not working %s (last error: %v)", when, l.lastErr.Load())
		}
	}
}

func (l *load) waitFailure(t *testing.T) {
	t.Helper()
	from := l.failed.Load()
	for deadline := time.Now().Add(slowCall); l.failed.Load() == from; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no store call failed with the server down")
		}
	}
	t.Logf("with the server down: %v", l.lastErr.Load())
}

func (l *load) stop(t *testing.T) {
	t.Helper()
	close(l.done)
	l.wg.Wait()
	t.Logf("calls: %d ok, %d failed, slowest %v", l.ok.Load(), l.failed.Load(), time.Duration(l.slowest.Load()))
	if d := time.Duration(l.slowest.Load()); d > slowCall {
		t.Errorf("slowest call took %v: calls hang while the server is down", d)
	}
}
