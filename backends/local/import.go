package local

import (
	"context"
	"fmt"
	"io"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

var _ engine.TreeImporter = (*Runtime)(nil)

// ImportTree copies the directory src into the project's storage through the archive format:
// symlinks (as they are), modes and empty directories come along, and nothing lands outside the
// project.
func (r *Runtime) ImportTree(ctx context.Context, p engine.Project, src string) error {
	dst, err := r.projectDir(p)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	werr := make(chan error, 1)
	go func() {
		_, err := archive.Write(ctx, src, pw, archive.WriteOptions{Exclude: []string{}, AnyLinkTarget: true})
		pw.CloseWithError(err)
		werr <- err
	}()
	// The source is the operator's own directory: its links are copied as they are.
	_, xerr := archive.Extract(ctx, pr, dst, archive.Limits{AnyLinkTarget: true})
	pr.CloseWithError(xerr)
	if err := <-werr; err != nil {
		return fmt.Errorf("import %s: read: %w", src, err)
	}
	if xerr != nil {
		return fmt.Errorf("import %s: %w", src, xerr)
	}
	return nil
}
