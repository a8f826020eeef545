package engine

import "context"

type progressKey struct{}

// WithProgress returns a context whose long operations report progress to fn. It is the one
// progress channel: the engine's steps and the Volumes implementations (archive and extract
// phases) all report through it.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ProgressFrom is the reporter WithProgress put in ctx; nil when there is none. Volumes
// implementations and sources of the console other than the engine (a test's) report through
// it, so there is one progress channel.
func ProgressFrom(ctx context.Context) ProgressFunc {
	fn, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return fn
}

// progressFor returns the reporter of ctx bound to one project and operation (never nil).
func progressFor(ctx context.Context, projectID string, op OpKind) ProgressFunc {
	fn := ProgressFrom(ctx)
	return func(p Progress) {
		if fn == nil {
			return
		}
		p.ProjectID, p.Op = projectID, op
		fn(p)
	}
}

// withProgressFor is ctx with its reporter bound to one project and operation, for the
// Volumes calls of that operation: their reports then name the operation the engine runs (a
// safety snapshot's archive phase is the restore's), whatever the implementation fills in.
// Without a reporter ctx is returned as it is, so implementations skip building reports.
func withProgressFor(ctx context.Context, projectID string, op OpKind) context.Context {
	if ProgressFrom(ctx) == nil {
		return ctx
	}
	return WithProgress(ctx, progressFor(ctx, projectID, op))
}
