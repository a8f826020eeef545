package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/stream"
)

// BackendName is what every archive Volumes stores in Snapshot.Backend: the archives of
// Sandwich and of the kubernetes archive volumes are the same objects under the same keys, so a
// snapshot made by either is restored by either.
const BackendName = "archive"

// DefaultPrefix is the first component of every object key unless SandwichOptions says otherwise.
const DefaultPrefix = "projects"

// cleanPrefix is prefix as keys use it: without surrounding slashes, DefaultPrefix when empty.
func cleanPrefix(prefix string) string {
	if p := strings.Trim(prefix, "/"); p != "" {
		return p
	}
	return DefaultPrefix
}

// Key is the object key of a snapshot: <prefix>/<owner or "_">/<project-id>/<snapshot-id>.tar.zst.
// Each part is path-escaped, so an owner such as "a/b" cannot add a level or climb out. The
// prefix loses surrounding slashes; an empty one is DefaultPrefix.
func Key(prefix, owner, projectID, snapshotID string) (string, error) {
	if owner == "" {
		owner = "_"
	}
	parts := []string{cleanPrefix(prefix)}
	for _, v := range []struct{ what, val string }{{"owner", owner}, {"project id", projectID}, {"snapshot id", snapshotID}} {
		seg := url.PathEscape(v.val)
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("archive key: %s %q not usable: %w", v.what, v.val, engine.ErrBadInput)
		}
		parts = append(parts, seg)
	}
	return strings.Join(parts, "/") + ".tar.zst", nil
}

// Location is where snapshot snap lives: its recorded Location, or the key Create would have
// used (so a Delete also clears what an interrupted Create may have left). A snapshot of
// another backend is refused.
func Location(prefix string, snap engine.Snapshot) (string, error) {
	if snap.Backend != "" && snap.Backend != BackendName {
		return "", fmt.Errorf("archive: snapshot %s belongs to backend %q: %w", snap.ID, snap.Backend, engine.ErrBadInput)
	}
	if snap.Location != "" {
		return snap.Location, nil
	}
	return Key(prefix, snap.Owner, snap.ProjectID, snap.ID)
}

// Verify reads the object key of store back in full and compares its size and SHA-256 with
// those recorded for snap: what makes an archive ready. A mismatch is engine.ErrChecksum.
func Verify(ctx context.Context, store engine.ObjectStore, key string, snap engine.Snapshot) error {
	if snap.SHA256 == "" {
		return fmt.Errorf("no recorded checksum to verify against: %w", engine.ErrBadInput)
	}
	info, err := store.Head(ctx, key)
	if err != nil {
		return fmt.Errorf("object %s: %w", key, err)
	}
	if snap.SizeBytes > 0 && info.Size != snap.SizeBytes {
		return fmt.Errorf("object %s has %d bytes, recorded %d: %w", key, info.Size, snap.SizeBytes, engine.ErrChecksum)
	}
	rc, err := store.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("object %s: %w", key, err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, stream.WithContext(ctx, rc)); err != nil {
		return fmt.Errorf("read object %s: %w", key, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, snap.SHA256) {
		return fmt.Errorf("object %s: %w: recorded %s, stored object has %s", key, engine.ErrChecksum, snap.SHA256, got)
	}
	return nil
}

// Put stores the archive write produces as the object key of store: write runs while store.Put
// reads what it writes through a pipe, and the compressed bytes are counted and hashed on the
// way, so memory stays bounded whatever the size of the project. write returns the unpacked
// size of what it archived; its ctx ends when Put fails, and it must return only once nothing
// it started still produces. A failure on either side fails both, and the store is left
// without an object. On success snap comes back as stored: location, sizes, SHA-256, backend.
func Put(ctx context.Context, store engine.ObjectStore, key string, snap engine.Snapshot,
	write func(ctx context.Context, w io.Writer) (unpacked int64, err error)) (engine.Snapshot, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	out := stream.NewHashWriter(pw, sha256.New())
	werrc := make(chan error, 1)
	var unpacked int64
	go func() {
		var err error
		unpacked, err = write(wctx, out)
		// The result is sent before the pipe is closed, so once Put has returned it is
		// already there if write ended first. A nil error closes the pipe with EOF; any other
		// reaches Put as a read error, which makes it fail instead of storing a truncated archive.
		werrc <- err
		pw.CloseWithError(err)
	}()
	info, putErr := store.Put(ctx, key, pr)
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
		// write failed first; whatever Put said follows from that.
		if putErr == nil {
			// The store took a stream that ended in an error as complete; undo that.
			_ = store.Delete(context.WithoutCancel(ctx), key)
		}
		return snap, werr
	case putErr != nil:
		return snap, fmt.Errorf("store %s: %w", key, putErr)
	case werr != nil:
		_ = store.Delete(context.WithoutCancel(ctx), key)
		return snap, werr
	case info.Size != out.N():
		_ = store.Delete(context.WithoutCancel(ctx), key)
		return snap, fmt.Errorf("store %s kept %d bytes of %d: %w", key, info.Size, out.N(), engine.ErrChecksum)
	}
	snap.Location = key
	snap.SizeBytes = out.N()
	snap.UnpackedBytes = unpacked
	snap.SHA256 = hex.EncodeToString(out.Sum())
	snap.Backend = BackendName
	return snap, nil
}

// Objects is the object-store half every archive Volumes shares (Sandwich, the kubernetes
// archive volumes): where a snapshot's archive lives and how it is stored, verified, read for
// a restore and deleted. Embedded, it gives them WaitReady and Delete (engine.Volumes), Archives
// and ArchiveKey (engine.ArchiveInventory) and RemoveLeftovers (engine.LeftoverCleaner).
type Objects struct {
	store  engine.ObjectStore
	prefix string
}

// NewObjects returns the archives of store under prefix (see Key).
func NewObjects(store engine.ObjectStore, prefix string) Objects {
	return Objects{store: store, prefix: cleanPrefix(prefix)}
}

// Key is the object key of a snapshot (see the function Key).
func (o Objects) Key(owner, projectID, snapshotID string) (string, error) {
	return Key(o.prefix, owner, projectID, snapshotID)
}

// Put stores what write produces as the archive of snapshot snap of project p (see the
// function Put), under the key of p's owner.
func (o Objects) Put(ctx context.Context, p engine.Project, snap engine.Snapshot,
	write func(ctx context.Context, w io.Writer) (unpacked int64, err error)) (engine.Snapshot, error) {
	key, err := o.Key(p.Owner, p.ID, snap.ID)
	if err != nil {
		return snap, err
	}
	return Put(ctx, o.store, key, snap, write)
}

// WaitReady implements engine.Volumes. An archive is complete once Put returned, so waiting is
// verifying: the object is read back in full and its SHA-256 compared with the recorded one.
// On success the snapshot is returned with Status SnapshotReady (ReadyAt is left to the engine,
// which owns the clock).
//
// A snapshot with parts (service volumes) is ready only when every part verifies too.
func (o Objects) WaitReady(ctx context.Context, snap engine.Snapshot) (engine.Snapshot, error) {
	key, err := Location(o.prefix, snap)
	if err == nil {
		err = Verify(ctx, o.store, key, snap)
	}
	if err != nil {
		return snap, fmt.Errorf("archive: verify snapshot %s: %w", snap.ID, err)
	}
	for i, part := range snap.Parts {
		if part.Absent {
			continue
		}
		sub := snap.Part(i)
		key, err := Location(o.prefix, sub)
		if err == nil {
			err = Verify(ctx, o.store, key, sub)
		}
		if err != nil {
			return snap, fmt.Errorf("archive: verify snapshot %s: service volume %s: %w", snap.ID, part.Name, err)
		}
	}
	snap.Status = engine.SnapshotReady
	return snap, nil
}

// Delete implements engine.Volumes; deleting a snapshot whose object is gone succeeds.
// Every part's object goes too.
func (o Objects) Delete(ctx context.Context, snap engine.Snapshot) error {
	subs := []engine.Snapshot{snap}
	for i := range snap.Parts {
		subs = append(subs, snap.Part(i))
	}
	for _, sub := range subs {
		key, err := Location(o.prefix, sub)
		if err != nil {
			return fmt.Errorf("archive: delete snapshot %s: %w", snap.ID, err)
		}
		if err := o.store.Delete(ctx, key); err != nil {
			return fmt.Errorf("archive: delete snapshot %s: object %s: %w", snap.ID, key, err)
		}
	}
	return nil
}

// Archives implements engine.ArchiveInventory: the snapshot objects under the prefix.
func (o Objects) Archives(ctx context.Context) ([]engine.ObjectInfo, error) {
	objs, err := o.store.List(ctx, o.prefix+"/")
	if err != nil {
		return nil, fmt.Errorf("archive: list %s/: %w", o.prefix, err)
	}
	return objs, nil
}

// ArchiveKey implements engine.ArchiveInventory.
func (o Objects) ArchiveKey(snap engine.Snapshot) (string, error) { return Location(o.prefix, snap) }

// RemoveLeftovers implements engine.LeftoverCleaner when the object store does: what killed
// Creates left in it.
func (o Objects) RemoveLeftovers(ctx context.Context, cutoff time.Time) (engine.Leftovers, error) {
	lc, ok := o.store.(engine.LeftoverCleaner)
	if !ok {
		return engine.Leftovers{}, nil
	}
	return lc.RemoveLeftovers(ctx, cutoff)
}

// Reader is a snapshot's archive open for a restore: Src hashes the object as the extraction
// reads it, and Verify then decides the restore.
type Reader struct {
	// Key is the object's key.
	Key string
	// Src is the object, hashed as it is read, reporting extract progress to the reporter of
	// the ctx Open got.
	Src *stream.HashReader
	// Limits are those of the restore: the Volumes' own, capped by what the snapshot recorded
	// (ForSnapshot), with snapshot windows and links anywhere (inert until the tree, whose
	// checksum matched, is swapped in).
	Limits Limits
	want   string
	rc     io.Closer
}

// Open opens the archive of snapshot snap for a restore into project p, with lim as the
// Volumes' limits. An object of another size than recorded is refused before a byte of it is
// read (see CheckObjectSize); a snapshot without a recorded checksum is refused too, since the
// restore could not tell its archive from another. Close the Reader when done.
func (o Objects) Open(ctx context.Context, p engine.Project, snap engine.Snapshot, lim Limits) (*Reader, error) {
	key, err := Location(o.prefix, snap)
	if err != nil {
		return nil, err
	}
	if snap.SHA256 == "" {
		return nil, fmt.Errorf("no recorded checksum to verify against: %w", engine.ErrBadInput)
	}
	if err := CheckObjectSize(ctx, o.store, key, snap); err != nil {
		return nil, err
	}
	rc, err := o.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", key, err)
	}
	var report func(done int64)
	if progress := engine.ProgressFrom(ctx); progress != nil {
		report = func(done int64) {
			progress(engine.Progress{ProjectID: p.ID, Op: engine.OpRestore, Phase: "extract", Done: done, Total: snap.SizeBytes})
		}
	}
	lim.AnyLinkTarget = true
	if lim.MaxWindow <= 0 {
		lim.MaxWindow = SnapshotMaxWindow
	}
	return &Reader{
		Key:    key,
		Src:    stream.NewHashReader(stream.WithContext(ctx, rc), sha256.New(), 4*progressStep, report),
		Limits: lim.ForSnapshot(snap),
		want:   snap.SHA256,
		rc:     rc,
	}, nil
}

// Verify decides the restore once its extraction from Src has stopped with xerr (see
// VerifyObject).
func (r *Reader) Verify(ctx context.Context, xerr error) error {
	return VerifyObject(ctx, r.Src, r.Key, r.want, xerr)
}

// Close closes the object.
func (r *Reader) Close() error { return r.rc.Close() }

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
