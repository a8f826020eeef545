package engine

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// pauseLog records, in order, what the fakes below were asked to do.
type pauseLog struct {
	mu     sync.Mutex
	events []string
}

func (l *pauseLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *pauseLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

type pauseStore struct {
	Store
	cs []Container
}

func (s pauseStore) ListContainers(context.Context, string) ([]Container, error) { return s.cs, nil }

// pausingRuntime offers Pauser; the rest of Runtime is never called here.
type pausingRuntime struct {
	Runtime
	log       *pauseLog
	pauseErr  error
	resumeErr error
	// resumeCtxErr is the error of the context resume was called with.
	resumeCtxErr error
}

func (r *pausingRuntime) PauseProject(ctx context.Context, p Project, cs []Container) (func(context.Context) error, error) {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	r.log.add("pause " + strings.Join(names, ","))
	if r.pauseErr != nil {
		return nil, r.pauseErr
	}
	return func(ctx context.Context) error {
		r.resumeCtxErr = ctx.Err()
		r.log.add("resume")
		return r.resumeErr
	}, nil
}

type plainRuntime struct{ Runtime }

type pauseVolumes struct {
	Volumes
	log    *pauseLog
	create func(ctx context.Context) error
}

func (v pauseVolumes) Create(ctx context.Context, p Project, s Snapshot) (Snapshot, error) {
	v.log.add("create")
	if v.create != nil {
		return s, v.create(ctx)
	}
	s.Location = "archive"
	return s, nil
}

func pauseOp(rt Runtime, vols Volumes, kind OpKind) (*op, *Bus) {
	bus := NewBus()
	e := &Engine{store: pauseStore{cs: []Container{{Name: "web"}, {Name: "db"}}}, runtime: rt, volumes: vols,
		notifier: bus, clock: SystemClock{}, log: slog.New(slog.DiscardHandler)}
	return &op{e: e, rec: Operation{Kind: kind}, p: Project{ID: "p1", Slug: "shop"}}, bus
}

// Only a snapshot of a running project pauses, and only around Create.
func TestCreatePointInTimeKinds(t *testing.T) {
	for kind, want := range map[OpKind][]string{
		OpSnapshot:  {"pause web,db", "create", "resume"},
		OpRestore:   {"pause web,db", "create", "resume"},
		OpHibernate: {"create"},
		OpDelete:    {"create"},
	} {
		log := &pauseLog{}
		o, _ := pauseOp(&pausingRuntime{log: log}, pauseVolumes{log: log}, kind)
		var phases []string
		progress := func(p Progress) { phases = append(phases, p.Phase) }
		s, err := o.createPointInTime(t.Context(), Snapshot{ID: "s1"}, progress)
		if err != nil || s.Location != "archive" {
			t.Errorf("%s: %+v, %v", kind, s, err)
		}
		if got := log.get(); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", kind, got, want)
		}
		if len(want) > 1 && !slices.Equal(phases, []string{"pause", "resume"}) {
			t.Errorf("%s: progress phases %v", kind, phases)
		}
	}
	// A runtime that cannot pause snapshots as before.
	log := &pauseLog{}
	o, _ := pauseOp(plainRuntime{}, pauseVolumes{log: log}, OpSnapshot)
	if _, err := o.createPointInTime(t.Context(), Snapshot{ID: "s1"}, func(Progress) {}); err != nil || !slices.Equal(log.get(), []string{"create"}) {
		t.Errorf("runtime without Pauser: %v, %v", log.get(), err)
	}
}

func TestCreatePointInTimeErrors(t *testing.T) {
	t.Run("create fails", func(t *testing.T) {
		log := &pauseLog{}
		o, _ := pauseOp(&pausingRuntime{log: log}, pauseVolumes{log: log, create: func(context.Context) error { return errors.New("disk full") }}, OpSnapshot)
		if _, err := o.createPointInTime(t.Context(), Snapshot{ID: "s1"}, func(Progress) {}); err == nil || err.Error() != "disk full" {
			t.Errorf("got %v, want Create's error as it is", err)
		}
		if got := log.get(); !slices.Equal(got, []string{"pause web,db", "create", "resume"}) {
			t.Errorf("calls %v: the containers must be resumed after a failed Create", got)
		}
	})
	t.Run("caller gives up", func(t *testing.T) {
		log := &pauseLog{}
		rt := &pausingRuntime{log: log}
		ctx, cancel := context.WithCancel(t.Context())
		o, _ := pauseOp(rt, pauseVolumes{log: log, create: func(ctx context.Context) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}}, OpRestore)
		if _, err := o.createPointInTime(ctx, Snapshot{ID: "s1"}, func(Progress) {}); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if got := log.get(); !slices.Equal(got, []string{"pause web,db", "create", "resume"}) || rt.resumeCtxErr != nil {
			t.Errorf("calls %v, resume context %v: resume must run, with a context that is not cancelled", got, rt.resumeCtxErr)
		}
	})
	t.Run("pause fails", func(t *testing.T) {
		log := &pauseLog{}
		o, _ := pauseOp(&pausingRuntime{log: log, pauseErr: errors.New("group 42 did not stop")}, pauseVolumes{log: log}, OpSnapshot)
		_, err := o.createPointInTime(t.Context(), Snapshot{ID: "s1"}, func(Progress) {})
		if err == nil || !strings.Contains(err.Error(), "pause containers: group 42 did not stop") {
			t.Errorf("got %v, want the pause error", err)
		}
		if got := log.get(); !slices.Equal(got, []string{"pause web,db"}) {
			t.Errorf("calls %v: nothing is archived when the project could not be paused", got)
		}
	})
	t.Run("resume fails", func(t *testing.T) {
		log := &pauseLog{}
		o, bus := pauseOp(&pausingRuntime{log: log, resumeErr: errors.New("daemon gone")}, pauseVolumes{log: log}, OpSnapshot)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		events, err := bus.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := o.createPointInTime(t.Context(), Snapshot{ID: "s1"}, func(Progress) {})
		if err != nil || s.Location != "archive" {
			t.Errorf("got %+v, %v: the snapshot stands when only the resume failed", s, err)
		}
		select {
		case ev := <-events:
			if ev.Kind != "container" || ev.Snapshot != "s1" || !strings.Contains(ev.Reason, "daemon gone") {
				t.Errorf("event %+v", ev)
			}
		case <-ctx.Done():
			t.Error("no event says the containers could not be resumed")
		}
	})
}
