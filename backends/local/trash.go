package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/sailtui/sailtui/engine/archive"
)

// Hibernation and deletion tear a project's tree down only after a ready, verified snapshot of
// it exists (invariant 1). Deleting a large tree takes longer than archiving it (most of a
// hibernation's time, measured), so the tree is moved out of the way instead, one rename on the
// same filesystem into <ProjectsDir>/.sailtui-trash/, and deleted there in the background: the
// project is hibernated as soon as the rename is done. A process that ends before the delete is
// done leaves the rest for the next Runtime of the same ProjectsDir, which resumes it; the
// command line waits for it before it exits (WaitReaped), the console does not.

const trashDirName = ".sailtui-trash"

// trash is the background delete of the trash directory: one goroutine at a time, run again
// when more was thrown away while it ran.
type trash struct {
	mu      sync.Mutex
	running bool
	again   bool
	idle    chan struct{} // closed while no delete runs
}

func (r *Runtime) trashDir() string { return filepath.Join(r.cfg.ProjectsDir, trashDirName) }

// throwAway moves dir into the trash and starts the delete. A missing dir is nothing to do.
// Where the rename cannot be done (another filesystem), dir is deleted in place.
func (r *Runtime) throwAway(dir, slug string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(r.trashDir(), 0o700); err != nil {
		return fmt.Errorf("make the trash directory: %w", err)
	}
	dst := filepath.Join(r.trashDir(), slug+"."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Rename(dir, dst); err != nil {
		if rmErr := archive.RemoveTree(dir); rmErr != nil {
			return fmt.Errorf("move %s to the trash: %w; delete it in place: %w", dir, err, rmErr)
		}
		return nil
	}
	r.emptyTrashLater()
	return nil
}

// emptyTrashLater starts the background delete of everything in the trash, or tells the one running to
// look again when it is done.
func (r *Runtime) emptyTrashLater() {
	t := &r.trash
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		t.again = true
		return
	}
	t.running = true
	t.idle = make(chan struct{})
	go func() {
		for {
			r.emptyTrash()
			t.mu.Lock()
			if !t.again {
				t.running = false
				close(t.idle)
				t.mu.Unlock()
				return
			}
			t.again = false
			t.mu.Unlock()
		}
	}()
}

// emptyTrash deletes every entry of the trash; what it cannot delete stays for the next time.
func (r *Runtime) emptyTrash() {
	entries, err := os.ReadDir(r.trashDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		_ = archive.RemoveTree(filepath.Join(r.trashDir(), e.Name()))
	}
}

// WaitReaped returns once the background delete of torn-down trees is done, or ctx ends.
func (r *Runtime) WaitReaped(ctx context.Context) error {
	t := &r.trash
	t.mu.Lock()
	running, idle := t.running, t.idle
	t.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TrashLeft lists what waits in the trash (trees of torn-down projects not deleted yet).
func (r *Runtime) TrashLeft() ([]string, error) {
	entries, err := os.ReadDir(r.trashDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = filepath.Join(r.trashDir(), e.Name())
	}
	return out, nil
}
