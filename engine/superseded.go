package engine

// Fencing a holder that was taken over. A holder can be paused rather than dead (SIGSTOP, a
// frozen VM, a partition from the store): another process then takes its operation over after
// SAILTUI_OP_TIMEOUT and finishes it. Every claim and takeover gives the project the next hold
// epoch, and every store write an operation makes is conditional on its epoch, so the resumed
// holder's next write is refused with ErrSuperseded. Before each step outside the store that
// destroys or replaces something (stop, tear down, swap a tree in, delete a snapshot's data)
// the op makes a fenced write first (guard); volumes that swap trees late in a long call check
// again just before the swap (CheckHold). What remains is the moment between that check and
// the act itself, as with any lease whose resource cannot check the token.

import (
	"context"
	"errors"
	"fmt"
)

// noteLost records err when it says the hold is gone, and returns err.
func (o *op) noteLost(err error) error {
	if err != nil && errors.Is(err, ErrSuperseded) {
		o.lost.CompareAndSwap(nil, &err)
	}
	return err
}

// supersededErr is the error of a superseded op (nil while it holds the project as far as it
// knows), saying what happened and what it means for the caller.
func (o *op) supersededErr() error {
	p := o.lost.Load()
	if p == nil {
		return nil
	}
	return fmt.Errorf("%s %s: this process was paused or cut off past SAILTUI_OP_TIMEOUT and another took the operation over (epoch %d is no longer the project's); it stopped without touching anything, see 'sailtui project describe %s' for the outcome: %w",
		o.rec.Kind, o.p.Slug, o.hold.Epoch, o.p.Slug, *p)
}

// joinSuperseded puts the superseded error first: it is what the caller must act on.
func joinSuperseded(opErr, lost error) error {
	if opErr == nil || errors.Is(opErr, ErrSuperseded) {
		return lost
	}
	return errors.Join(lost, opErr)
}

// guard is the fenced check before a step outside the store: a heartbeat conditional on this
// op's epoch. Any error (superseded, or a store that does not answer, so the hold cannot be
// proven) means the step must not run.
func (o *op) guard(ctx context.Context, what string) error {
	if err := o.supersededErr(); err != nil {
		return err
	}
	if err := o.e.store.Heartbeat(context.WithoutCancel(ctx), o.p.ID, o.hold, o.e.now()); err != nil {
		if errors.Is(o.noteLost(err), ErrSuperseded) {
			return o.supersededErr()
		}
		return fmt.Errorf("%s %s: before %s, prove the hold: %w", o.rec.Kind, o.p.Slug, what, err)
	}
	return nil
}

// withGuard gives a long call (a volume restore) the op's guard, for CheckHold.
func (o *op) withGuard(ctx context.Context) context.Context {
	return context.WithValue(ctx, holdCheckKey{}, func(ctx context.Context, what string) error { return o.guard(ctx, what) })
}

type holdCheckKey struct{}

// CheckHold is what a Volumes implementation calls right before it swaps a restored tree in or
// removes what the project has (after a long extraction, during which its caller may have been
// taken over): nil when ctx carries no operation's guard or the operation still holds the
// project, else the reason not to go on.
func CheckHold(ctx context.Context, what string) error {
	if f, ok := ctx.Value(holdCheckKey{}).(func(context.Context, string) error); ok {
		return f(ctx, what)
	}
	return nil
}
