package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Use is a file operation or an exec in progress on a project: a shared use that the
// operations which need the project to themselves wait out, or stop, before they touch its
// storage (invariant 9). It lives in the store, so the fence holds across processes and hosts.
type Use struct {
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	// Kind says what the use is for humans: "files put", "exec web".
	Kind      string    `json:"kind"`
	Owner     string    `json:"owner"`
	StartedAt time.Time `json:"started_at"`
	Heartbeat time.Time `json:"heartbeat"`
	// Revoked, when set, asks the holder to stop; it is the reason the holder reports.
	Revoked string `json:"revoked,omitempty"`
	// Source is the door the use is activity of ("files", "exec", "terminal"): BeginUse
	// records it with the activity; the use's own row does not keep it.
	Source string `json:"-"`
}

// exclusiveOps need a project's storage to themselves: they snapshot it, replace it or remove
// it, so a write that lands meanwhile could be in neither the project nor the snapshot.
// Start and stop leave the files alone and so leave uses alone.
var exclusiveOps = []OpKind{OpHibernate, OpWake, OpRestore, OpSnapshot, OpDelete}

// DefaultUseWait is how long an exclusive operation waits for uses in progress.
const DefaultUseWait = 30 * time.Second

// usePoll is how often a use's holder looks for a revocation, and how often a waiting
// operation looks whether the uses are done: a stop request takes effect in a fraction of a
// second, at the cost of one indexed read per running exec and interval.
const usePoll = 200 * time.Millisecond

// errStopped is the cause of a use's context when an operation asked it to stop.
type errStopped struct{ reason string }

func (e errStopped) Error() string { return "stopped: " + e.reason }

// withUse runs fn while holding a shared use of the active project ref. fn's context ends when
// an operation asks the use to stop; the error then says which operation. A use that an
// operation had to drop is reported as failed even when fn succeeded: what it wrote may have
// landed after the snapshot was taken.
func (e *Engine) withUse(ctx context.Context, ref, kind, source string, fn func(ctx context.Context, p Project) error) error {
	p, err := e.liveProject(ctx, ref)
	if err != nil {
		return err
	}
	if e.cfg.ReadOnly {
		// Only reads get here in read-only mode, and such a console changes nothing, not even
		// the activity a use records: it reads what is there (a store it cannot write, too).
		if p.Status != StatusActive {
			if err := e.inProgress(ctx, useTitle(kind, p.Slug), p); err != nil {
				return err
			}
			return notActive(kind, p.Slug, p.Status)
		}
		return fn(ctx, p)
	}
	now := e.now()
	u := Use{ID: newID(), ProjectID: p.ID, Kind: kind, Owner: e.cfg.Owner, StartedAt: now, Heartbeat: now, Source: source}
	if err := e.store.BeginUse(ctx, u, exclusiveOps); err != nil {
		if errors.Is(err, ErrConflict) {
			return e.useRefusal(ctx, p, kind)
		}
		return fmt.Errorf("%s: record use: %w", useTitle(kind, p.Slug), err)
	}
	uctx, cancel := context.WithCancelCause(ctx)
	stopWatch := e.watchUse(uctx, cancel, u)
	err = fn(uctx, p)
	stopWatch()
	var stopped errStopped
	if errors.As(context.Cause(uctx), &stopped) && err != nil {
		err = fmt.Errorf("%s: %w: %w", useTitle(kind, p.Slug), stopped, ErrBusy)
	}
	cancel(nil)
	endErr := e.endUse(context.WithoutCancel(ctx), u)
	switch {
	case err != nil:
		return err
	case errors.Is(endErr, ErrNotFound):
		why := "an operation took the project over while it ran"
		if stopped.reason != "" {
			why = stopped.reason
		}
		return fmt.Errorf("%s: %s; what it changed may not be kept, check and run it again: %w", useTitle(kind, p.Slug), why, ErrBusy)
	case endErr != nil:
		return fmt.Errorf("%s: end use: %w", useTitle(kind, p.Slug), endErr)
	}
	return nil
}

// endUse ends u, trying a few times: a use left behind by a store that blinked would hold
// every exclusive operation off until it goes stale (SAILTUI_OP_TIMEOUT) in a process that
// lives on, such as a console.
func (e *Engine) endUse(ctx context.Context, u Use) error {
	var err error
	for attempt := range 3 {
		if err = e.store.EndUse(ctx, u.ProjectID, u.ID, Activity{At: e.now(), Source: u.Source, Actor: u.Owner}); err == nil || errors.Is(err, ErrNotFound) {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return err
}

// useRefusal explains why a use could not begin: an operation holds the project, or it is not active.
func (e *Engine) useRefusal(ctx context.Context, p Project, kind string) error {
	cur, err := e.store.GetProject(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("%s: project changed, try again: %w", useTitle(kind, p.Slug), ErrBusy)
	}
	if cur.OpID != "" && (slices.Contains(exclusiveOps, cur.OpKind) || cur.Status != StatusActive) {
		return e.inProgress(ctx, useTitle(kind, p.Slug), cur)
	}
	if cur.Status != StatusActive {
		return notActive(kind, p.Slug, cur.Status)
	}
	return fmt.Errorf("%s: another operation just changed the project, try again: %w", useTitle(kind, p.Slug), ErrBusy)
}

// useTitle names a use the way its command line does, the project first (exec SLUG
// CONTAINER, files get SLUG), so the words of a refusal can be typed again as they read.
func useTitle(kind, slug string) string {
	if name, ok := strings.CutPrefix(kind, "exec "); ok {
		return "exec " + slug + " " + name
	}
	return kind + " " + slug
}

// notActive refuses a use of a project that is not running, with the two commands that get
// it done: the wake, then the use again.
func notActive(kind, slug string, status ProjectStatus) error {
	title := useTitle(kind, slug)
	again := "run this again"
	switch {
	case strings.HasPrefix(kind, "exec "):
		again = "sailtui " + title + " -- …"
	case strings.HasPrefix(kind, "files "):
		again = "sailtui " + title + " …"
	}
	return fmt.Errorf("%s: project is %s; wake it first: sailtui project wake %s, then %s: %w", title, status, slug, again, ErrBadState)
}

// watchUse polls the use until stop is called: a revocation (or the use gone) cancels ctx with
// the reason, and the use's heartbeat is kept fresh so it is never taken for a dead one.
func (e *Engine) watchUse(ctx context.Context, cancel context.CancelCauseFunc, u Use) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	beatEvery := max(e.cfg.OpTimeout/4, time.Second)
	go func() {
		defer close(finished)
		t := time.NewTicker(usePoll)
		defer t.Stop()
		lastBeat := time.Now()
		bg := context.WithoutCancel(ctx)
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cur, err := e.store.GetUse(bg, u.ID)
			switch {
			case errors.Is(err, ErrNotFound):
				cancel(errStopped{"an operation dropped this use of the project"})
				return
			case err == nil && cur.Revoked != "":
				cancel(errStopped{cur.Revoked})
				return
			}
			if time.Since(lastBeat) >= beatEvery {
				lastBeat = time.Now()
				// A failed heartbeat is retried at the next beat; only a use silent past the
				// op timeout is dropped.
				now := e.now()
				_ = e.store.HeartbeatUse(bg, u.ID, now)
				// A use in progress is activity for as long as it lasts (issue 35): a terminal
				// someone types in for an hour, or a long build, must not read as an hour idle,
				// so neither the warning nor "hibernates in" counts down under it.
				if u.Source != "" {
					_ = e.store.Touch(bg, u.ProjectID, Activity{At: now, Source: u.Source, Actor: u.Owner})
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// useStale reports whether a use's holder is gone: dead on this host, or silent past the op timeout.
func (e *Engine) useStale(u Use) bool {
	return holderDead(u.Owner) || e.now().Sub(u.Heartbeat) > e.cfg.OpTimeout
}

// fenceMode says what an exclusive operation does about uses that do not end.
type fenceMode int

const (
	// fenceWait waits (bounded), asks the uses to stop after a third of the wait, and refuses
	// the operation when they are still there at the end.
	fenceWait fenceMode = iota
	// fenceIdle is the sweep's: a use is activity, so the project is not idle; refuse at once.
	fenceIdle
	// fenceForce is a resumed operation's: its predecessor already waited, so uses left over
	// are asked to stop and, after the wait, dropped (their holders report failure).
	fenceForce
)

// fence returns once no use of the held project is left (invariant 9). New uses are already
// refused: the project is held by an exclusive operation.
func (o *op) fence(ctx context.Context, mode fenceMode) error {
	e := o.e
	start := time.Now()
	deadline, askAt := start.Add(e.cfg.UseWait), start.Add(e.cfg.UseWait/3)
	asked := map[string]bool{}
	reason := fmt.Sprintf("%s of %s needs the project (operation %s)", o.rec.Kind, o.p.Slug, o.rec.ID)
	for {
		uses, err := e.store.ListUses(ctx, o.p.ID)
		if err != nil {
			return fmt.Errorf("%s %s: list uses: %w", o.rec.Kind, o.p.Slug, err)
		}
		var live []Use
		for _, u := range uses {
			if !e.useStale(u) {
				live = append(live, u)
				continue
			}
			if err := e.store.EndUse(ctx, o.p.ID, u.ID, Activity{}); err != nil && !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("%s %s: drop stale use %s: %w", o.rec.Kind, o.p.Slug, u.ID, err)
			}
			e.log.Info("dropped use of a gone holder", "project", o.p.Slug, "use", u.Kind, "owner", u.Owner)
		}
		if len(live) == 0 {
			return nil
		}
		if mode == fenceIdle {
			return fmt.Errorf("%s %s: in use by %s: %w", o.rec.Kind, o.p.Slug, describeUses(live), ErrBusy)
		}
		now := time.Now()
		if now.After(deadline) {
			if mode == fenceForce {
				for _, u := range live {
					if err := e.store.EndUse(ctx, o.p.ID, u.ID, Activity{}); err != nil && !errors.Is(err, ErrNotFound) {
						return fmt.Errorf("%s %s: drop use %s: %w", o.rec.Kind, o.p.Slug, u.ID, err)
					}
					e.log.Warn("dropped a use that did not stop", "project", o.p.Slug, "use", u.Kind, "owner", u.Owner)
				}
				continue
			}
			return fmt.Errorf("%s %s: still in use by %s after %s; nothing was changed, try again when it is done: %w",
				o.rec.Kind, o.p.Slug, describeUses(live), e.cfg.UseWait, ErrBusy)
		}
		if now.After(askAt) || mode == fenceForce {
			for _, u := range live {
				if asked[u.ID] {
					continue
				}
				asked[u.ID] = true
				if err := e.store.RevokeUse(ctx, u.ID, reason); err != nil && !errors.Is(err, ErrNotFound) {
					return fmt.Errorf("%s %s: stop %s: %w", o.rec.Kind, o.p.Slug, u.Kind, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: wait for %s: %w", o.rec.Kind, o.p.Slug, describeUses(live), ctx.Err())
		case <-time.After(usePoll / 4):
		}
	}
}

// describeUses names uses for an error message: "files put (host/123, since 10:04:05), exec web (...)".
func describeUses(us []Use) string {
	parts := make([]string, 0, len(us))
	for _, u := range us {
		parts = append(parts, fmt.Sprintf("%s (%s, since %s)", u.Kind, u.Owner, u.StartedAt.Format("15:04:05")))
	}
	return strings.Join(parts, ", ")
}
