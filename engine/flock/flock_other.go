//go:build !unix

package flock

import "context"

// Lock locks nothing where flock is missing: what it serialises (a rotation, a record's
// update) may then race, and its callers say what that costs.
func Lock(ctx context.Context, _ string, _ bool) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return func() {}, nil
}
