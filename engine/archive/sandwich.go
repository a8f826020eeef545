package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/periodic"
)

// restoreTag marks the temporary siblings of a storage directory made by Restore; leftovers of
// an interrupted restore are recognised by it and removed by the next one.
const restoreTag = ".restore-"

// StorageDirs tells the sandwich where a project's storage lives: the one directory holding all
// of it, which is what a snapshot captures and a restore replaces.
type StorageDirs interface {
	StorageDir(p engine.Project) string
}

// PartDirs is offered by StorageDirs whose projects have storage besides their files: the data
// volumes of service containers (docker). PartDir is the directory holding the volume of
// service part of p on this machine; with create, a missing volume is made (a restore).
type PartDirs interface {
	PartDir(ctx context.Context, p engine.Project, part string, create bool) (string, error)
}

// SandwichOptions tunes a Sandwich. The zero value is usable.
type SandwichOptions struct {
	// Prefix is the first part of object keys (default DefaultPrefix); it may contain slashes.
	Prefix string
	// Exclude is passed to Write (nil: DefaultExcludes).
	Exclude []string
	// Limits caps restores (zero fields: the defaults).
	Limits Limits
}

// Sandwich is the engine.Volumes that stores a project's storage directory as one archive
// object (Write's format) in an engine.ObjectStore: the "S3 sandwich" of DESIGN.md. The SHA-256
// of the stored bytes is recorded at creation and checked when verifying and when restoring.
type Sandwich struct {
	Objects
	dirs StorageDirs
	opts SandwichOptions
}

var _ engine.Volumes = (*Sandwich)(nil)

// NewSandwich returns a Sandwich keeping archives in store.
func NewSandwich(store engine.ObjectStore, dirs StorageDirs, opts SandwichOptions) *Sandwich {
	return &Sandwich{Objects: NewObjects(store, opts.Prefix), dirs: dirs, opts: opts}
}

// Name implements engine.Volumes.
func (s *Sandwich) Name() string { return BackendName }

// Create implements engine.Volumes: Write streams the storage directory into the object store
// through Put, so memory stays bounded whatever the size of the project, and a failure on
// either side leaves the store without an object.
func (s *Sandwich) Create(ctx context.Context, p engine.Project, snap engine.Snapshot) (engine.Snapshot, error) {
	fail := func(err error) (engine.Snapshot, error) {
		return snap, fmt.Errorf("archive: create snapshot %s of project %s: %w", snap.ID, p.ID, err)
	}
	dir := s.dirs.StorageDir(p)
	if dir == "" {
		return fail(fmt.Errorf("no storage directory: %w", engine.ErrBadInput))
	}
	// A missing storage directory is an error, never an empty snapshot (invariant 1).
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("storage %s: %w", dir, engine.ErrNotFound))
		}
		return fail(err)
	} else if !fi.IsDir() {
		return fail(fmt.Errorf("storage %s is not a directory: %w", dir, engine.ErrBadInput))
	}
	// A project's own links (a venv's bin/python -> /usr/bin/python3) must not block its
	// hibernation; restores check the checksum before the tree is swapped in (see Restore).
	opts := WriteOptions{Exclude: s.opts.Exclude, AnyLinkTarget: true}
	if progress := engine.ProgressFrom(ctx); progress != nil {
		op := snap.Type.TakenBy()
		opts.Progress = func(done, total int64) {
			progress(engine.Progress{ProjectID: p.ID, Op: op, Phase: "archive", Done: done, Total: total})
		}
	}

	var skipped engine.SkippedEntries
	noteSkipped := func(prefix string, st Stats) {
		skipped.Count += st.Skipped
		for _, p := range st.SkippedPaths {
			if len(skipped.First) < MaxSkippedPaths {
				skipped.First = append(skipped.First, prefix+p)
			}
		}
	}
	stored, err := s.Put(ctx, p, snap, func(ctx context.Context, w io.Writer) (int64, error) {
		st, err := Write(ctx, dir, w, opts)
		noteSkipped("", st)
		return st.Bytes, err
	})
	if err != nil {
		return fail(err)
	}
	// Each service volume is an archive of its own beside the files' (see engine.Snapshot.Part),
	// so a snapshot of a project without services is what it always was.
	stored.Parts = slices.Clone(snap.Parts)
	for i, part := range stored.Parts {
		pdir, err := s.partDir(ctx, p, part.Name, false)
		if errors.Is(err, engine.ErrNotFound) {
			// A service never started has no volume yet: nothing of it to lose, and a
			// snapshot that refused it would keep its project from ever hibernating.
			stored.Parts[i].Absent = true
			continue
		}
		if err != nil {
			return fail(err)
		}
		// A service's data keeps its owners (PostgreSQL refuses a data directory of root's).
		popts := opts
		popts.Owners = true
		sub, err := s.Put(ctx, p, stored.Part(i), func(ctx context.Context, w io.Writer) (int64, error) {
			st, err := Write(ctx, pdir, w, popts)
			noteSkipped("service "+part.Name+": ", st)
			return st.Bytes, err
		})
		if err != nil {
			return fail(fmt.Errorf("service volume %s: %w", part.Name, err))
		}
		stored.SetPart(i, sub)
	}
	stored.Skipped = skipped
	return stored, nil
}

// CapturesServiceVolumes implements engine.ServiceVolumes when the storage has them.
func (s *Sandwich) CapturesServiceVolumes() bool {
	_, ok := s.dirs.(PartDirs)
	return ok
}

func (s *Sandwich) partDir(ctx context.Context, p engine.Project, part string, create bool) (string, error) {
	pd, ok := s.dirs.(PartDirs)
	if !ok {
		return "", fmt.Errorf("service volume %s: this storage has no service volumes: %w", part, engine.ErrBadInput)
	}
	dir, err := pd.PartDir(ctx, p, part, create)
	if err != nil {
		return "", fmt.Errorf("service volume %s: %w", part, err)
	}
	if dir == "" {
		return "", fmt.Errorf("service volume %s: no directory: %w", part, engine.ErrBadInput)
	}
	return dir, nil
}

// Restore implements engine.Volumes. The archive is extracted into a fresh sibling of the
// storage directory (same filesystem, so the final rename is atomic) while its bytes are hashed.
// Only when the extraction succeeded and the checksum matches is the new tree flushed to disk
// (one syncfs) and swapped in; otherwise the sibling is removed and the existing storage is
// untouched. A missing storage directory (a hibernated project) is created, parents included.
//
// Crash safety. Nothing under the storage directory changes before the swap, and the swap
// happens only after a syncfs issued once the extraction is complete has returned: at any
// crash point the storage directory holds either the old tree or the complete, checksummed new
// one, on disk. While the tree is being written, writeback is started early by background
// syncfs calls (see startFlusher), so that the final one finds little left to write; those
// early calls only move work earlier and are not relied on. After the swap the parent
// directory is synced before the old tree is removed, so a crash can never leave the old tree
// deleted while the rename that replaced it is still only in memory. A sibling left by a crash
// before the swap is removed by the next restore.
func (s *Sandwich) Restore(ctx context.Context, p engine.Project, snap engine.Snapshot) error {
	fail := func(err error) error {
		return fmt.Errorf("archive: restore snapshot %s into project %s: %w", snap.ID, p.ID, err)
	}
	dir := s.dirs.StorageDir(p)
	if dir == "" {
		return fail(fmt.Errorf("no storage directory: %w", engine.ErrBadInput))
	}
	// Every part is extracted and verified before any is swapped in: a snapshot is restored
	// whole or not at all. A crash between two swaps leaves the operation to be resumed,
	// which restores them all again.
	type target struct {
		dir    string
		snap   engine.Snapshot
		tmp    string
		owners bool
	}
	targets := []*target{{dir: dir, snap: snap}}
	for i, part := range snap.Parts {
		if part.Absent {
			continue
		}
		pdir, err := s.partDir(ctx, p, part.Name, true)
		if err != nil {
			return fail(err)
		}
		targets = append(targets, &target{dir: pdir, snap: snap.Part(i), owners: true})
	}
	defer func() {
		for _, t := range targets {
			if t.tmp != "" {
				_ = RemoveTree(t.tmp)
			}
		}
	}()
	for _, t := range targets {
		tmp, err := s.stage(ctx, p, t.snap, t.dir, t.owners)
		if err != nil {
			if t.snap.ID != snap.ID {
				err = fmt.Errorf("service volume %s: %w", strings.TrimPrefix(t.snap.ID, snap.ID+"."), err)
			}
			return fail(err)
		}
		t.tmp = tmp
	}
	// The extraction may have taken long enough for the operation to be taken over (a paused
	// process): the swap is made only while it still holds the project.
	if err := engine.CheckHold(ctx, "swap the restored tree in"); err != nil {
		return fail(err)
	}
	for _, t := range targets {
		if err := swapIn(t.tmp, t.dir); err != nil {
			return fail(err)
		}
		t.tmp = ""
	}
	return nil
}

// stage extracts snapshot snap into a fresh sibling of dir and verifies it, and returns the
// sibling, complete and on disk, ready for swapIn. With owners the entries get the owners the
// archive recorded (a service volume's; as root only).
func (s *Sandwich) stage(ctx context.Context, p engine.Project, snap engine.Snapshot, dir string, owners bool) (string, error) {
	lim := s.opts.Limits
	lim.Owners = owners
	obj, err := s.Open(ctx, p, snap, lim)
	if err != nil {
		return "", err
	}
	defer obj.Close()
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	removeStale(parent, base)
	tmp, err := os.MkdirTemp(parent, "."+base+restoreTag)
	if err != nil {
		return "", err
	}
	// Links may point anywhere (Open's limits): they are inert until the tree is swapped in,
	// and that happens only once the checksum proves this is the archive Create wrote.
	stopFlusher := startFlusher(tmp)
	_, xerr := Extract(ctx, obj.Src, tmp, obj.Limits)
	stopFlusher()
	err = obj.Verify(ctx, xerr)
	if err == nil {
		// The barrier: the whole new tree is on disk before it replaces anything.
		err = syncFS(tmp)
	}
	if err != nil {
		_ = RemoveTree(tmp)
		return "", err
	}
	return tmp, nil
}

// flushInterval is the pause between two early flushes of a tree being restored: short enough
// that little is left dirty at the end, long enough that an idle restore (waiting on a slow
// network) does not sync the filesystem in a loop.
const flushInterval = 100 * time.Millisecond

// startFlusher syncs the filesystem holding dir every flushInterval until stop is called, so
// that the kernel writes a tree being extracted as it goes instead of all at the end: the
// writeback then overlaps with the extraction. stop waits for a sync in progress. Errors are
// ignored: the final syncFS, which Restore relies on, reports them.
func startFlusher(dir string) (stop func()) {
	return periodic.Every(context.Background(), flushInterval, func(context.Context) { _ = syncFS(dir) })
}

// swapIn puts the restored tree tmp at dir. Where the kernel can exchange two paths atomically
// the storage directory never disappears, even for a moment; otherwise the old tree is moved
// aside first and moved back if the second rename fails. The parent is synced, so that the
// swap is on disk, before the old tree is removed; if removing fails, its name (a restore
// sibling) lets the next restore clean it up.
func swapIn(tmp, dir string) error {
	parent := filepath.Dir(dir)
	if err := exchange(tmp, dir); err == nil {
		if err := syncDir(parent); err != nil {
			// The new tree is in place, the old one at tmp: left for the next restore,
			// since its removal could reach the disk before the exchange does.
			return nil
		}
		_ = RemoveTree(tmp)
		return nil
	}
	old := tmp + "-old"
	if err := os.Rename(dir, old); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("move old storage aside: %w", err)
		}
		old = ""
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return fmt.Errorf("move restored storage in: %w", err)
	}
	if old != "" && syncDir(parent) == nil {
		_ = RemoveTree(old)
	}
	return nil
}

// exchange is renameExchange, as a variable so tests can take the fallback path on Linux too.
var exchange = renameExchange

// removeStale removes what interrupted restores of dir left behind: siblings named
// ".<base>.restore-<digits>" (and "-old" for the fallback swap). The digits check keeps a
// project whose name merely starts the same way out of it.
func removeStale(parent, base string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	prefix := "." + base + restoreTag
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		rest = strings.TrimSuffix(rest, "-old")
		if rest == "" || strings.TrimLeft(rest, "0123456789") != "" {
			continue
		}
		_ = RemoveTree(filepath.Join(parent, e.Name()))
	}
}

// RemoveTree is os.RemoveAll that also copes with read-only directories, which a project or
// restored tree may legitimately contain. The directories are made writable through an
// os.Root of the tree, so one swapped for a symlink meanwhile cannot lead the chmod outside.
func RemoveTree(p string) error {
	if err := os.RemoveAll(p); err == nil {
		return nil
	}
	if root, err := os.OpenRoot(p); err == nil {
		_ = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				_ = root.Chmod(path, 0o700)
			}
			return nil
		})
		_ = root.Close()
	}
	return os.RemoveAll(p)
}
