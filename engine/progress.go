package engine

import "context"

type progressKey struct{}

// WithProgress returns a context whose long operations report progress to fn.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// progressFor returns the reporter of ctx bound to one project and operation (never nil).
func progressFor(ctx context.Context, projectID string, op OpKind) ProgressFunc {
	fn, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return func(p Progress) {
		if fn == nil {
			return
		}
		p.ProjectID, p.Op = projectID, op
		fn(p)
	}
}

// contextBackground exists so background work started by an operation is visibly detached from
// the caller's cancellation (heartbeats must outlive a cancelled step until the op ends).
func contextBackground() context.Context { return context.Background() }
