// Package trash deletes torn-down project trees off the critical path. Hibernation and
// deletion tear a project's tree down only after a ready, verified snapshot of it exists
// (invariant 1). Deleting a large tree takes longer than archiving it (most of a hibernation's
// time, measured), so the tree is moved out of the way instead, one rename on the same
// filesystem into the bin's directory, and deleted there in the background: the project is
// hibernated as soon as the rename is done. A process that ends before the delete is done
// leaves the rest for the next Bin of the same directory, which resumes it; the command line
// waits for it before it exits (Wait), the console does not. A wake never reads from the bin:
// it restores from the snapshot.
package trash

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// DirName is the bin's directory name inside the directory whose trees it takes.
const DirName = ".sailtui-trash"

// Bin is the trash of one directory of project trees: one background delete at a time, run
// again when more was thrown away while it ran.
type Bin struct {
	dir string

	mu      sync.Mutex
	running bool
	again   bool
	idle    chan struct{} // closed once no delete runs
}

// Open returns the bin of parent (<parent>/.sailtui-trash) and starts deleting what a process
// that ended first left in it.
func Open(parent string) *Bin {
	b := &Bin{dir: filepath.Join(parent, DirName)}
	if left, _ := b.Left(); len(left) > 0 {
		b.emptyLater()
	}
	return b
}

// Dir is the bin's directory.
func (b *Bin) Dir() string { return b.dir }

// Throw moves dir into the bin and starts the delete; name (a project's slug) is the start of
// its name there. A missing dir is nothing to do. Where the rename cannot be done (dir is on
// another filesystem), dir is deleted in place.
func (b *Bin) Throw(dir, name string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return fmt.Errorf("make the trash directory: %w", err)
	}
	dst := filepath.Join(b.dir, name+"."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Rename(dir, dst); err != nil {
		if rmErr := archive.RemoveTree(dir); rmErr != nil {
			return fmt.Errorf("move %s to the trash: %w; delete it in place: %w", dir, err, rmErr)
		}
		return nil
	}
	b.emptyLater()
	return nil
}

// emptyLater starts the background delete of everything in the bin, or tells the one running
// to look again when it is done.
func (b *Bin) emptyLater() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running {
		b.again = true
		return
	}
	b.running = true
	b.idle = make(chan struct{})
	go func() {
		for {
			b.empty()
			b.mu.Lock()
			if !b.again {
				b.running = false
				close(b.idle)
				b.mu.Unlock()
				return
			}
			b.again = false
			b.mu.Unlock()
		}
	}()
}

// empty deletes every entry of the bin; what it cannot delete stays for the next time.
func (b *Bin) empty() {
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		_ = archive.RemoveTree(filepath.Join(b.dir, e.Name()))
	}
}

// Empty deletes what is in the bin now and returns once it is done (or ctx ends), with what
// could not be deleted.
func (b *Bin) Empty(ctx context.Context) error {
	b.emptyLater()
	if err := b.Wait(ctx); err != nil {
		return err
	}
	left, err := b.Left()
	if err != nil {
		return err
	}
	if len(left) > 0 {
		paths := make([]string, len(left))
		for i, it := range left {
			paths[i] = it.Path
		}
		return fmt.Errorf("could not delete %s (see its permissions)", strings.Join(paths, ", "))
	}
	return nil
}

// Wait returns once the background delete is done, or ctx ends.
func (b *Bin) Wait(ctx context.Context) error {
	b.mu.Lock()
	running, idle := b.running, b.idle
	b.mu.Unlock()
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

// Reaper is the engine.Reaper of a runtime that throws torn-down trees into a bin: embedded in
// the runtime, it gives it WaitReaped, TrashLeft and EmptyTrash over the bin, and nothing else
// of the bin.
type Reaper struct{ bin *Bin }

var _ engine.Reaper = Reaper{}

// Reaper is the bin as the engine.Reaper of its runtime.
func (b *Bin) Reaper() Reaper { return Reaper{bin: b} }

// WaitReaped implements engine.Reaper: Wait.
func (r Reaper) WaitReaped(ctx context.Context) error { return r.bin.Wait(ctx) }

// TrashLeft implements engine.Reaper: Left.
func (r Reaper) TrashLeft() ([]engine.TrashItem, error) { return r.bin.Left() }

// EmptyTrash implements engine.Reaper: Empty.
func (r Reaper) EmptyTrash(ctx context.Context) error { return r.bin.Empty(ctx) }

// Left lists what waits in the bin: trees of torn-down projects not deleted yet.
func (b *Bin) Left() ([]engine.TrashItem, error) {
	entries, err := os.ReadDir(b.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the trash %s: %w", b.dir, err)
	}
	out := make([]engine.TrashItem, len(entries))
	for i, e := range entries {
		it := engine.TrashItem{Path: filepath.Join(b.dir, e.Name())}
		if _, stamp, ok := cutLast(e.Name(), "."); ok {
			if ns, err := strconv.ParseInt(stamp, 10, 64); err == nil {
				it.Since = time.Unix(0, ns)
			}
		}
		if it.Since.IsZero() {
			if fi, err := e.Info(); err == nil {
				it.Since = fi.ModTime()
			}
		}
		out[i] = it
	}
	return out, nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
