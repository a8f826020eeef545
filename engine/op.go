package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// op is one journaled operation holding a project. Every step is written to the journal before
// the engine moves on, so a process killed anywhere leaves a record the next one can resume from.
type op struct {
	e      *Engine
	rec    Operation
	p      Project
	stopHB func()
	// resumed is true when this op took over a dead or silent holder's journal entry.
	resumed bool
	// fenced is when the last use of the project had ended (see fence): activity before it was
	// waited out, activity after it is news.
	fenced time.Time
	// hold is this op's hold on the project: its id and the epoch its claim or takeover got.
	hold Hold
	// lost is set once a fenced write found the hold at a newer epoch (see superseded.go):
	// from then on the op touches nothing, not even to roll back.
	lost atomic.Pointer[error]
	// kept names the safety snapshot a wake took of storage it found present.
	kept string
}

// claim takes p for a new operation of kind, moving it from one of from to to.
func (e *Engine) claim(ctx context.Context, p Project, kind OpKind, from []ProjectStatus, to ProjectStatus, c Claim) (*op, error) {
	now := e.now()
	c.OpID, c.Kind, c.Owner, c.Now, c.From, c.To = newID(), kind, e.cfg.Owner, now, from, to
	claimed, err := e.store.ClaimProject(ctx, p.ID, c)
	if err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, e.claimRefusal(ctx, p, kind, from)
		}
		return nil, fmt.Errorf("%s %s: claim: %w", kind, p.Slug, err)
	}
	o := &op{e: e, p: claimed, hold: HoldOf(claimed), rec: Operation{
		ID: c.OpID, ProjectID: p.ID, Kind: kind, Step: "claimed", State: OpRunning,
		Owner: e.cfg.Owner, StartedAt: now, UpdatedAt: now, Epoch: claimed.OpEpoch,
	}}
	if err := e.store.InsertOp(ctx, o.rec); err != nil {
		// The hold is ours but unjournaled: give it back rather than work without a journal.
		_, _ = e.store.ReleaseProject(ctx, p.ID, Release{OpID: c.OpID, Epoch: o.hold.Epoch, To: p.Status, Now: e.now()})
		return nil, fmt.Errorf("%s %s: journal: %w", kind, p.Slug, err)
	}
	o.stopHB = e.heartbeat(ctx, o)
	if p.Status != to {
		e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, From: p.Status, To: to, Reason: string(kind)})
	}
	e.hook(kind, "claimed")
	if slices.Contains(exclusiveOps, kind) {
		mode := fenceWait
		if !c.IdleBefore.IsZero() {
			mode = fenceIdle
		}
		if err := o.fence(ctx, mode); err != nil {
			// Nothing was done yet: the project goes back as it was.
			_, err = o.finish(ctx, Release{To: p.Status, Reason: p.StatusReason}, OpRolledBack, err)
			return nil, err
		}
	}
	o.fenced = e.now()
	return o, nil
}

// claimRefusal explains why a claim was lost, re-reading the project.
func (e *Engine) claimRefusal(ctx context.Context, p Project, kind OpKind, from []ProjectStatus) error {
	cur, err := e.store.GetProject(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, p.Slug, ErrConflict)
	}
	if err := e.inProgress(ctx, string(kind)+" "+cur.Slug, cur); err != nil {
		return err
	}
	if !slices.Contains(from, cur.Status) {
		return fmt.Errorf("%s %s: project is %s: %w", kind, p.Slug, cur.Status, ErrBadState)
	}
	// Another operation held it at the claim and has finished since: busy a moment ago.
	return fmt.Errorf("%s %s: another operation just changed the project, try again: %w", kind, p.Slug, errors.Join(ErrBusy, ErrConflict))
}

// takeOver resumes the operation of a holder that died or went silent; its journal entry (and
// so the snapshot it already made) is reused.
func (e *Engine) takeOver(ctx context.Context, p Project) (*op, error) {
	now := e.now()
	claimed, err := e.store.ClaimProject(ctx, p.ID, Claim{
		OpID: p.OpID, Kind: p.OpKind, Owner: e.cfg.Owner, Now: now,
		From: []ProjectStatus{p.Status}, To: p.Status, TakeOver: p.OpID,
	})
	if err != nil {
		return nil, fmt.Errorf("take over %s of %s: %w", p.OpKind, p.Slug, err)
	}
	o := &op{e: e, p: claimed, hold: HoldOf(claimed), resumed: true}
	rec, err := e.store.GetOp(ctx, p.OpID)
	switch {
	case errors.Is(err, ErrNotFound):
		// Killed between the claim and the journal write: nothing was done yet.
		rec = Operation{ID: p.OpID, ProjectID: p.ID, Kind: p.OpKind, Step: "claimed",
			State: OpRunning, StartedAt: p.OpHeartbeat, UpdatedAt: now, Epoch: o.hold.Epoch}
		rec.Owner = e.cfg.Owner
		if err := e.store.InsertOp(ctx, rec); err != nil {
			return nil, fmt.Errorf("take over %s of %s: journal: %w", p.OpKind, p.Slug, err)
		}
	case err != nil:
		return nil, fmt.Errorf("take over %s of %s: read journal: %w", p.OpKind, p.Slug, err)
	}
	e.log.Info("taking over stale operation", "project", p.Slug, "op", rec.Kind, "step", rec.Step,
		"previous_owner", p.OpOwner, "epoch", o.hold.Epoch)
	rec.Owner, rec.UpdatedAt, rec.Epoch = e.cfg.Owner, now, o.hold.Epoch
	o.rec = rec
	if err := e.store.UpdateOp(ctx, rec); err != nil {
		return nil, fmt.Errorf("take over %s of %s: journal: %w", p.OpKind, p.Slug, err)
	}
	o.stopHB = e.heartbeat(ctx, o)
	if slices.Contains(exclusiveOps, rec.Kind) {
		if err := o.fence(ctx, fenceForce); err != nil {
			o.stopHB()
			return nil, err
		}
	}
	o.fenced = e.now()
	return o, nil
}

func (e *Engine) hook(kind OpKind, step string) {
	if e.cfg.StepHook != nil {
		e.cfg.StepHook(kind, step)
	}
}

// step journals that the operation reached name. The write is fenced: a superseded op learns
// it here and stops (see superseded.go).
func (o *op) step(ctx context.Context, name string) error {
	if err := o.supersededErr(); err != nil {
		return err
	}
	o.rec.Step, o.rec.UpdatedAt = name, o.e.now()
	if err := o.e.store.UpdateOp(ctx, o.rec); err != nil {
		err = o.noteLost(fmt.Errorf("%s %s: journal step %s: %w", o.rec.Kind, o.p.Slug, name, err))
		if errors.Is(err, ErrSuperseded) {
			return o.supersededErr()
		}
		return err
	}
	o.e.hook(o.rec.Kind, name)
	return nil
}

// finish releases the project into r.To and closes the journal entry as state. A superseded op
// releases nothing and writes nothing: the project is its taker's.
func (o *op) finish(ctx context.Context, r Release, state OpState, opErr error) (Project, error) {
	defer o.stopHB()
	if err := o.supersededErr(); err != nil {
		return o.p, joinSuperseded(opErr, err)
	}
	// Finishing must happen even when the caller's context is cancelled (SIGTERM): a hold left
	// behind would block the project until the op timeout.
	ctx = context.WithoutCancel(ctx)
	from := o.p.Status
	r.OpID, r.Epoch, r.Now = o.rec.ID, o.hold.Epoch, o.e.now()
	p, err := o.e.store.ReleaseProject(ctx, o.p.ID, r)
	if err != nil {
		err = o.noteLost(fmt.Errorf("%s %s: release: %w", o.rec.Kind, o.p.Slug, err))
		if errors.Is(err, ErrSuperseded) {
			return o.p, joinSuperseded(opErr, o.supersededErr())
		}
		return o.p, errors.Join(opErr, err)
	}
	o.p = p
	o.rec.State, o.rec.FinishedAt, o.rec.UpdatedAt = state, r.Now, r.Now
	if opErr != nil {
		o.rec.Error = opErr.Error()
	}
	if err := o.e.store.UpdateOp(ctx, o.rec); err != nil {
		o.e.log.Warn("close journal entry", "project", p.Slug, "op", o.rec.ID, "err", err)
	}
	if from != r.To || opErr != nil {
		o.e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, From: from, To: r.To, Reason: reasonOf(o.rec.Kind, opErr)})
	}
	return p, opErr
}

func reasonOf(kind OpKind, err error) string {
	if err != nil {
		return fmt.Sprintf("%s failed: %v", kind, err)
	}
	return string(kind)
}

// inProgress is the refusal of what to do on p while an operation holds it: it names the
// operation, since when it runs and what to do (wait for it), rather than advice for the
// state the operation passes through ("wake it first" during a hibernation), which cannot be
// followed then. title names what was refused, the project's slug in it. nil when no
// operation holds p.
func (e *Engine) inProgress(ctx context.Context, title string, p Project) error {
	if p.OpID == "" {
		return nil
	}
	since := p.OpHeartbeat
	if rec, err := e.store.GetOp(ctx, p.OpID); err == nil && !rec.StartedAt.IsZero() {
		since = rec.StartedAt
	}
	return fmt.Errorf("%s: %s is in progress (since %s, by %s); wait for it to finish, then run this again: %w",
		title, p.OpKind, since.Local().Format("15:04:05"), p.OpOwner, ErrBusy)
}
