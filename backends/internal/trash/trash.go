// Package trash deletes torn-down project trees off the critical path. Hibernation and
// deletion tear a project's tree down only after a ready, verified snapshot of it exists
// (invariant 1). Deleting a large tree takes longer than archiving it (most of a hibernation's
// time, measured), so the tree is moved out of the way instead, one rename on the same
// filesystem into the bin's directory, and deleted there in the background: the project is
// hibernated as soon as the rename is done. A process that ends before the delete is done
// leaves the rest for the next Bin of the same directory, which resumes it; the command line
// waits for it before it exits (Wait), the console does not. A wake never reads from the bin:
// it restores from the snapshot.
//
// The bin's directory is never followed when it is a symbolic link: emptying it through one
// would delete whatever the link points at. Such a bin is refused, by every call, with the way
// out. A read-only bin (--readonly) deletes nothing: what waits in it stays for a run that may.
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
	dir      string
	readOnly bool

	mu      sync.Mutex
	running bool
	again   bool
	idle    chan struct{} // closed once no delete runs
}

// Options are how a bin may be used.
type Options struct {
	// ReadOnly deletes nothing: Throw and Empty are refused with engine.ErrReadOnly, and what
	// a process that ended first left in the bin stays there.
	ReadOnly bool
}

// Open returns the bin of parent (<parent>/.sailtui-trash) and starts deleting what a process
// that ended first left in it (unless read-only, or the bin is a symlink: Left says so).
func Open(parent string, opts Options) *Bin {
	b := &Bin{dir: filepath.Join(parent, DirName), readOnly: opts.ReadOnly}
	if left, _ := b.Left(); len(left) > 0 && !b.readOnly {
		b.emptyLater()
	}
	return b
}

// checkDir refuses a bin whose directory is a symbolic link (or anything but a directory).
// A missing one is fine: nothing waits in it.
func (b *Bin) checkDir() error {
	fi, err := os.Lstat(b.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look at the trash %s: %w", b.dir, err)
	}
	return b.refuseNonDir(fi)
}

func (b *Bin) refuseNonDir(fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		to, _ := os.Readlink(b.dir)
		return fmt.Errorf("the trash directory %s is a symbolic link (to %q): sailtui never follows it, since emptying it would delete what it points at; remove the link (rm %s: what it points to stays as it is) and sailtui makes a directory of its own there: %w",
			b.dir, to, b.dir, engine.ErrBadInput)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the trash directory %s is not a directory (%s): move it away and sailtui makes a directory of its own there: %w",
			b.dir, fi.Mode().Type(), engine.ErrBadInput)
	}
	return nil
}

// Dir is the bin's directory.
func (b *Bin) Dir() string { return b.dir }

// Throw moves dir into the bin and starts the delete; name (a project's slug) is the start of
// its name there. A missing dir is nothing to do. Where the rename cannot be done (dir is on
// another filesystem), dir is deleted in place.
func (b *Bin) Throw(dir, name string) error {
	if b.readOnly {
		return fmt.Errorf("move %s to the trash: %w", dir, engine.ErrReadOnly)
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := b.checkDir(); err != nil {
		return err
	}
	if err := os.Mkdir(b.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make the trash directory: %w", err)
	}
	// Checked again: the directory that exists now may be a link made meanwhile, and the
	// tree must not be moved to where it points.
	if err := b.checkDir(); err != nil {
		return err
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

// empty deletes every entry of the bin; what it cannot delete stays for the next time, and a
// bin that is a symlink is not touched (Left and Empty say why).
func (b *Bin) empty() {
	root, err := b.openRoot()
	if err != nil {
		return
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return
	}
	for _, e := range entries {
		removeIn(root, e.Name())
	}
}

// openRoot opens the bin's directory as an os.Root, so that nothing deleted through it can be
// outside it. os.OpenRoot follows a link in the name itself, so what was opened must be the
// directory that is at the bin's path, not a link: checked after the open, a link swapped in
// before it or meanwhile shows as a link or as another directory, and is refused.
func (b *Bin) openRoot() (*os.Root, error) {
	if err := b.checkDir(); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(b.dir)
	if err != nil {
		return nil, fmt.Errorf("open the trash %s: %w", b.dir, err)
	}
	opened, err := root.Stat(".")
	if err == nil {
		var at fs.FileInfo
		if at, err = os.Lstat(b.dir); err == nil {
			if err = b.refuseNonDir(at); err == nil && !os.SameFile(opened, at) {
				err = fmt.Errorf("the trash directory %s changed while it was opened; try again", b.dir)
			}
		}
	}
	if err != nil {
		_ = root.Close()
		return nil, err
	}
	return root, nil
}

// removeIn is archive.RemoveTree inside root: it also copes with read-only directories, made
// writable through the root so that none swapped for a link leads the chmod outside.
func removeIn(root *os.Root, name string) {
	if root.RemoveAll(name) == nil {
		return
	}
	_ = fs.WalkDir(root.FS(), name, func(path string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = root.Chmod(path, 0o700)
		}
		return nil
	})
	_ = root.RemoveAll(name)
}

// Empty deletes what is in the bin now and returns once it is done (or ctx ends), with what
// could not be deleted.
func (b *Bin) Empty(ctx context.Context) error {
	if b.readOnly {
		return fmt.Errorf("empty the trash %s: %w", b.dir, engine.ErrReadOnly)
	}
	if err := b.checkDir(); err != nil {
		return err
	}
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
	if _, err := os.Lstat(b.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	root, err := b.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
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
