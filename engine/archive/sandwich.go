package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/stream"
)

// BackendName is what Sandwich stores in Snapshot.Backend.
const BackendName = "archive"

// DefaultPrefix is the first component of every object key unless SandwichOptions says otherwise.
const DefaultPrefix = "projects"

// restoreTag marks the temporary siblings of a storage directory made by Restore; leftovers of
// an interrupted restore are recognised by it and removed by the next one.
const restoreTag = ".restore-"

// StorageDirs tells the sandwich where a project's storage lives: the one directory holding all
// of it, which is what a snapshot captures and a restore replaces.
type StorageDirs interface {
	StorageDir(p engine.Project) string
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
	store  engine.ObjectStore
	dirs   StorageDirs
	prefix string
	opts   SandwichOptions
}

var _ engine.Volumes = (*Sandwich)(nil)

// NewSandwich returns a Sandwich keeping archives in store.
func NewSandwich(store engine.ObjectStore, dirs StorageDirs, opts SandwichOptions) *Sandwich {
	prefix := strings.Trim(opts.Prefix, "/")
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Sandwich{store: store, dirs: dirs, prefix: prefix, opts: opts}
}

// Name implements engine.Volumes.
func (s *Sandwich) Name() string { return BackendName }

// Key is the object key of a snapshot: <prefix>/<owner or "_">/<project-id>/<snapshot-id>.tar.zst.
// Each part is path-escaped, so an owner such as "a/b" cannot add a level or climb out.
func (s *Sandwich) Key(owner, projectID, snapshotID string) (string, error) {
	if owner == "" {
		owner = "_"
	}
	parts := []string{s.prefix}
	for _, v := range []struct{ what, val string }{{"owner", owner}, {"project id", projectID}, {"snapshot id", snapshotID}} {
		seg := url.PathEscape(v.val)
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("archive key: %s %q not usable: %w", v.what, v.val, engine.ErrBadInput)
		}
		parts = append(parts, seg)
	}
	return strings.Join(parts, "/") + ".tar.zst", nil
}

// location is where snapshot s lives: its recorded Location, or the key Create would have used
// (so Delete also clears what an interrupted Create may have left).
func (s *Sandwich) location(snap engine.Snapshot) (string, error) {
	if snap.Backend != "" && snap.Backend != BackendName {
		return "", fmt.Errorf("archive: snapshot %s belongs to backend %q: %w", snap.ID, snap.Backend, engine.ErrBadInput)
	}
	if snap.Location != "" {
		return snap.Location, nil
	}
	return s.Key(snap.Owner, snap.ProjectID, snap.ID)
}

// Create implements engine.Volumes: Write streams through a pipe into store.Put while the
// compressed bytes are counted and hashed on the way, so memory stays bounded whatever the size
// of the project. A failure on either side fails both, and the store is left without an object.
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
	key, err := s.Key(p.Owner, p.ID, snap.ID)
	if err != nil {
		return fail(err)
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

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	out := stream.NewHashWriter(pw, sha256.New())
	werrc := make(chan error, 1)
	var st Stats
	go func() {
		var err error
		st, err = Write(wctx, dir, out, opts)
		// The result is sent before the pipe is closed, so once Put has returned it is
		// already there if Write ended first. A nil error closes the pipe with EOF; any other
		// reaches Put as a read error, which makes it fail instead of storing a truncated archive.
		werrc <- err
		pw.CloseWithError(err)
	}()
	info, putErr := s.store.Put(ctx, key, pr)
	var werr error
	writeEnded := false
	select {
	case werr = <-werrc:
		writeEnded = true
	default:
	}
	if putErr != nil {
		cancel()
		pr.CloseWithError(putErr)
	}
	if !writeEnded {
		werr = <-werrc
	}
	switch {
	case writeEnded && werr != nil:
		// Write failed first; whatever Put said follows from that.
		if putErr == nil {
			// The store took a stream that ended in an error as complete; undo that.
			_ = s.store.Delete(context.WithoutCancel(ctx), key)
		}
		return fail(werr)
	case putErr != nil:
		return fail(fmt.Errorf("store %s: %w", key, putErr))
	case werr != nil:
		_ = s.store.Delete(context.WithoutCancel(ctx), key)
		return fail(werr)
	case info.Size != out.N():
		_ = s.store.Delete(context.WithoutCancel(ctx), key)
		return fail(fmt.Errorf("store %s kept %d bytes of %d: %w", key, info.Size, out.N(), engine.ErrChecksum))
	}
	return Stored(snap, key, out, st.Bytes), nil
}

// Stored is snap as a Create that streamed its archive through out into the object key
// records it: where it is, its size and SHA-256, and what it holds unpacked.
func Stored(snap engine.Snapshot, key string, out *stream.HashWriter, unpacked int64) engine.Snapshot {
	snap.Location = key
	snap.SizeBytes = out.N()
	snap.UnpackedBytes = unpacked
	snap.SHA256 = hex.EncodeToString(out.Sum())
	snap.Backend = BackendName
	return snap
}

// WaitReady implements engine.Volumes. An archive is complete once Put returned, so waiting is
// verifying: the object is read back in full and its SHA-256 compared with the recorded one.
// On success the snapshot is returned with Status SnapshotReady (ReadyAt is left to the engine,
// which owns the clock).
func (s *Sandwich) WaitReady(ctx context.Context, snap engine.Snapshot) (engine.Snapshot, error) {
	fail := func(err error) (engine.Snapshot, error) {
		return snap, fmt.Errorf("archive: verify snapshot %s: %w", snap.ID, err)
	}
	key, err := s.location(snap)
	if err != nil {
		return fail(err)
	}
	if snap.SHA256 == "" {
		return fail(fmt.Errorf("no recorded checksum to verify against: %w", engine.ErrBadInput))
	}
	info, err := s.store.Head(ctx, key)
	if err != nil {
		return fail(fmt.Errorf("object %s: %w", key, err))
	}
	if snap.SizeBytes > 0 && info.Size != snap.SizeBytes {
		return fail(fmt.Errorf("object %s has %d bytes, recorded %d: %w", key, info.Size, snap.SizeBytes, engine.ErrChecksum))
	}
	rc, err := s.store.Get(ctx, key)
	if err != nil {
		return fail(fmt.Errorf("object %s: %w", key, err))
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, stream.WithContext(ctx, rc)); err != nil {
		return fail(fmt.Errorf("read object %s: %w", key, err))
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, snap.SHA256) {
		return fail(fmt.Errorf("object %s: %w: recorded %s, stored object has %s", key, engine.ErrChecksum, snap.SHA256, got))
	}
	snap.Status = engine.SnapshotReady
	return snap, nil
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
	key, err := s.location(snap)
	if err != nil {
		return fail(err)
	}
	if snap.SHA256 == "" {
		return fail(fmt.Errorf("no recorded checksum to verify against: %w", engine.ErrBadInput))
	}
	dir := s.dirs.StorageDir(p)
	if dir == "" {
		return fail(fmt.Errorf("no storage directory: %w", engine.ErrBadInput))
	}
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fail(err)
	}
	removeStale(parent, base)
	tmp, err := os.MkdirTemp(parent, "."+base+restoreTag)
	if err != nil {
		return fail(err)
	}
	swapped := false
	defer func() {
		if !swapped {
			_ = RemoveTree(tmp)
		}
	}()

	if err := CheckObjectSize(ctx, s.store, key, snap); err != nil {
		return fail(err)
	}
	rc, err := s.store.Get(ctx, key)
	if err != nil {
		return fail(fmt.Errorf("object %s: %w", key, err))
	}
	defer rc.Close()
	var report func(done int64)
	if progress := engine.ProgressFrom(ctx); progress != nil {
		report = func(done int64) {
			progress(engine.Progress{ProjectID: p.ID, Op: engine.OpRestore, Phase: "extract", Done: done, Total: snap.SizeBytes})
		}
	}
	src := stream.NewHashReader(stream.WithContext(ctx, rc), sha256.New(), 4*progressStep, report)
	lim := s.opts.Limits
	// Links may point anywhere: they are inert until the tree is swapped in, and that happens
	// only once the checksum proves this is the archive Create wrote.
	lim.AnyLinkTarget = true
	if lim.MaxWindow <= 0 {
		lim.MaxWindow = SnapshotMaxWindow
	}
	lim = lim.ForSnapshot(snap)
	stopFlusher := startFlusher(tmp)
	_, xerr := Extract(ctx, src, tmp, lim)
	stopFlusher()
	if err := VerifyObject(ctx, src, key, snap.SHA256, xerr); err != nil {
		return fail(err)
	}
	// The barrier: the whole new tree is on disk before it replaces anything.
	if err := syncFS(tmp); err != nil {
		return fail(err)
	}
	if err := swapIn(tmp, dir); err != nil {
		return fail(err)
	}
	swapped = true
	return nil
}

// CheckObjectSize refuses an object of another size than the one recorded for snap before a
// byte of it is decompressed: it is not this snapshot, and a small object may expand into more
// than the disk holds (a zstd bomb).
func CheckObjectSize(ctx context.Context, store engine.ObjectStore, key string, snap engine.Snapshot) error {
	if snap.SizeBytes <= 0 {
		return nil
	}
	info, err := store.Head(ctx, key)
	if err != nil {
		return fmt.Errorf("object %s: %w", key, err)
	}
	if info.Size != snap.SizeBytes {
		return fmt.Errorf("object %s has %d bytes, recorded %d: %w", key, info.Size, snap.SizeBytes, engine.ErrChecksum)
	}
	return nil
}

// ForSnapshot is l for restoring snap: the checksum is known only at the end of the object,
// so until then the unpacked size recorded at create is what stops an object that expands
// past what was written. An unknown size (0 or less: an old snapshot, an empty tree, a
// snapshot record made by hand) leaves l as it is.
func (l Limits) ForSnapshot(snap engine.Snapshot) Limits {
	if snap.UnpackedBytes > 0 && (l.MaxBytes <= 0 || snap.UnpackedBytes < l.MaxBytes) {
		l.MaxBytes = snap.UnpackedBytes
	}
	return l
}

// RemoveLeftovers implements engine.LeftoverCleaner when the object store does: what killed
// Creates left in it.
func (s *Sandwich) RemoveLeftovers(ctx context.Context, cutoff time.Time) (engine.Leftovers, error) {
	lc, ok := s.store.(engine.LeftoverCleaner)
	if !ok {
		return engine.Leftovers{}, nil
	}
	return lc.RemoveLeftovers(ctx, cutoff)
}

// Archives implements engine.ArchiveInventory: the snapshot objects under the prefix.
func (s *Sandwich) Archives(ctx context.Context) ([]engine.ObjectInfo, error) {
	objs, err := s.store.List(ctx, s.prefix+"/")
	if err != nil {
		return nil, fmt.Errorf("archive: list %s/: %w", s.prefix, err)
	}
	return objs, nil
}

// ArchiveKey implements engine.ArchiveInventory.
func (s *Sandwich) ArchiveKey(snap engine.Snapshot) (string, error) { return s.location(snap) }

// Delete implements engine.Volumes; deleting a snapshot whose object is gone succeeds.
func (s *Sandwich) Delete(ctx context.Context, snap engine.Snapshot) error {
	key, err := s.location(snap)
	if err != nil {
		return fmt.Errorf("archive: delete snapshot %s: %w", snap.ID, err)
	}
	if err := s.store.Delete(ctx, key); err != nil {
		return fmt.Errorf("archive: delete snapshot %s: object %s: %w", snap.ID, key, err)
	}
	return nil
}

// VerifyObject decides a restore once its extraction from src has stopped, with xerr (nil if
// it succeeded). It reads what is left of the object (normally nothing) unless ctx is done, so
// that the checksum covers all of it: a corrupted object often shows up as a decoding error
// first, and only the checksum tells corruption from an intact archive that was refused. The
// result is an engine.ErrChecksum error when the object, read to its end, is not the one
// recorded as want (the extraction's error beside it); else xerr; else a read error when the
// object could not be read to its end; nil only for an intact object fully extracted.
func VerifyObject(ctx context.Context, src *stream.HashReader, key, want string, xerr error) error {
	if ctx.Err() == nil {
		_, _ = io.Copy(io.Discard, src)
	}
	eof, sum, rerr := src.Result()
	if eof {
		if got := hex.EncodeToString(sum); !strings.EqualFold(got, want) {
			err := fmt.Errorf("object %s: %w: recorded %s, read %s", key, engine.ErrChecksum, want, got)
			if xerr != nil {
				err = fmt.Errorf("%w (extraction stopped with: %v)", err, xerr)
			}
			return err
		}
	}
	if xerr != nil {
		return xerr
	}
	if !eof {
		err := rerr
		if err == nil {
			err = ctx.Err()
		}
		return fmt.Errorf("read object %s: %w", key, err)
	}
	return nil
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
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(flushInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			_ = syncFS(dir)
			t.Reset(flushInterval)
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
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
