package engine

import (
	"context"
	"errors"
)

// ErrStopping is the cause of a wait cut short because the sweep running its operation was
// told to stop (SIGTERM: a CronJob's deadline, a node drain).
var ErrStopping = errors.New("the sweep was told to stop")

type stopKey struct{}

// withStop is ctx (whose own cancellation the caller has cut off: the steps of an operation in
// flight go on to a journaled end) carrying stop, whose end the waits in it honour.
func withStop(ctx, stop context.Context) context.Context {
	return context.WithValue(ctx, stopKey{}, stop)
}

// WaitContext is ctx for a wait on something outside sailtui (a snapshot getting ready, pods
// or a namespace going): cancelled with ctx, and also, with cause ErrStopping, when the sweep
// running the operation is told to stop. An operation whose wait is cut short hands its
// project back as after a timeout, so a stopped sweep exits in its grace period instead of
// being killed mid-operation. Every wait of a Runtime or Volumes for something outside should
// go through it; cancel must be called.
func WaitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	stop, _ := ctx.Value(stopKey{}).(context.Context)
	if stop == nil {
		return context.WithCancel(ctx)
	}
	w, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(stop, func() { cancel(ErrStopping) })
	return w, func() { unhook(); cancel(context.Canceled) }
}
