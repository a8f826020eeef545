package local

import (
	"context"

	"github.com/sailtui/sailtui/engine"
)

// A torn-down project tree goes to <ProjectsDir>/.sailtui-trash in one rename and is deleted
// there in the background (backends/internal/trash): a hibernation returns at archive speed.

var _ engine.Reaper = (*Runtime)(nil)

// WaitReaped implements engine.Reaper.
func (r *Runtime) WaitReaped(ctx context.Context) error { return r.trash.Wait(ctx) }

// TrashLeft implements engine.Reaper.
func (r *Runtime) TrashLeft() ([]engine.TrashItem, error) { return r.trash.Left() }

// EmptyTrash implements engine.Reaper.
func (r *Runtime) EmptyTrash(ctx context.Context) error { return r.trash.Empty(ctx) }
