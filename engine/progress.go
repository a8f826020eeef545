package engine

import "context"

type progressKey struct{}

// WithProgress returns a context whose long operations report progress to fn.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ProgressFrom is the reporter WithProgress put in ctx; nil when there is none. Sources of the
// console other than the engine (a test's) report through it, so there is one progress channel.
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
