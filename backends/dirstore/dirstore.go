// Package dirstore is the engine.ObjectStore kept in a local directory: the embedded default,
// where archive objects live as plain files under a root, one per key.
package dirstore

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
	"syscall"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/stream"
)

// tmpPrefix starts the names of objects being written. Keys may not contain a component
// starting with it, so a temporary file is never mistaken for an object.
const tmpPrefix = ".dirstore-tmp-"

// copyBufSize is the write size of Put: big enough that a multi-gigabyte object costs few syscalls.
const copyBufSize = 256 << 10

// Store keeps each object at <root>/<key>. Writes go to a temporary file in the object's
// directory, are synced and then renamed over the key, so a reader sees either the previous
// object or the complete new one, and a failed Put leaves nothing behind.
type Store struct {
	root string
}

var _ engine.ObjectStore = (*Store)(nil)

// New opens (creating it if needed) the store rooted at root.
func New(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("dirstore %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("dirstore %s: %w", root, err)
	}
	s := &Store{root: abs}
	s.removeStaleTemps(time.Now().Add(-staleTempAge))
	return s, nil
}

// tempPattern names a Put's temporary file after the process writing it
// (.dirstore-tmp-<host>~<pid>~<start>-<random>), so the purge can tell the leftover of a
// killed writer at once instead of waiting for it to age.
func tempPattern() string {
	return tmpPrefix + strings.ReplaceAll(engine.ProcessOwner(), "/", "~") + "-*"
}

// tempOwner is the writer a temporary file name carries ("" for names without one).
func tempOwner(name string) string {
	rest := strings.TrimPrefix(name, tmpPrefix)
	i := strings.LastIndexByte(rest, '-')
	if i < 0 || !strings.Contains(rest[:i], "~") {
		return ""
	}
	return strings.ReplaceAll(rest[:i], "~", "/")
}

// RemoveLeftovers implements engine.LeftoverCleaner: temporary files whose writer is dead, or
// that were last written before cutoff (a live Put keeps its file's mtime fresh).
func (s *Store) RemoveLeftovers(ctx context.Context, cutoff time.Time) (engine.Leftovers, error) {
	var out engine.Leftovers
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // gone meanwhile: its Put finished or failed
		}
		if owner := tempOwner(d.Name()); !(owner != "" && engine.OwnerDead(owner)) && !fi.ModTime().Before(cutoff) {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p, err)
		}
		out.Count++
		out.Bytes += fi.Size()
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("dirstore %s: remove leftovers: %w", s.root, err)
	}
	return out, nil
}

// staleTempAge is how long a temporary file must have gone unwritten before it is taken for
// the leftover of a Put killed mid-way. A live Put keeps its file's mtime fresh.
const staleTempAge = time.Hour

// removeStaleTemps deletes temporary files last written before cutoff. Best effort: they take
// space but never look like objects.
func (s *Store) removeStaleTemps(cutoff time.Time) {
	_ = filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().Before(cutoff) {
			_ = os.Remove(p)
		}
		return nil
	})
}

// Describe implements engine.ObjectStore.
func (s *Store) Describe() string { return "dir " + s.root }

// checkKey is engine.CheckKey, which keeps every object inside root, plus the components this
// store reserves for its temporary files.
func checkKey(key string) error {
	if err := engine.CheckKey(key); err != nil {
		return err
	}
	for part := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(part, tmpPrefix) {
			return fmt.Errorf("key %q: component starts with the reserved %q: %w", key, tmpPrefix, engine.ErrBadPath)
		}
	}
	return nil
}

func (s *Store) path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

// Put implements engine.ObjectStore.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (engine.ObjectInfo, error) {
	fail := func(err error) (engine.ObjectInfo, error) {
		return engine.ObjectInfo{}, fmt.Errorf("dirstore: put %q: %w", key, err)
	}
	if err := checkKey(key); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	dst := s.path(key)
	dir := filepath.Dir(dst)
	f, err := createTemp(dir)
	if err != nil {
		return fail(err)
	}
	done := false
	defer func() {
		if !done {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	// A plain Writer wrapper, so the copy uses this buffer instead of os.File's 32 KiB one.
	buf := make([]byte, copyBufSize)
	if _, err := io.CopyBuffer(struct{ io.Writer }{f}, stream.WithContext(ctx, r), buf); err != nil {
		return fail(err)
	}
	// Sync before the rename: after a crash the key must hold either nothing or all of it.
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return fail(err)
	}
	done = true
	syncDir(dir)
	fi, err := os.Stat(dst)
	if err != nil {
		return fail(err)
	}
	return engine.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime().UTC()}, nil
}

// createTemp makes the temporary file for a Put in dir. A concurrent Delete may prune dir
// between the MkdirAll and the create, so that is retried a few times.
func createTemp(dir string) (*os.File, error) {
	var err error
	for range 5 {
		if err = os.MkdirAll(dir, 0o755); err != nil {
			continue
		}
		var f *os.File
		if f, err = os.CreateTemp(dir, tempPattern()); err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, err
}

// syncDir makes a rename in dir durable. Best effort: the object is complete either way, and
// some filesystems refuse to sync directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// Get implements engine.ObjectStore.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("dirstore: get %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dirstore: get %q: %w", key, err)
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, fmt.Errorf("dirstore: get %q: %w", key, notFound(err))
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not an object: %w", engine.ErrNotFound)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("dirstore: get %q: %w", key, err)
	}
	return f, nil
}

// Head implements engine.ObjectStore.
func (s *Store) Head(ctx context.Context, key string) (engine.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return engine.ObjectInfo{}, fmt.Errorf("dirstore: head %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return engine.ObjectInfo{}, fmt.Errorf("dirstore: head %q: %w", key, err)
	}
	fi, err := os.Stat(s.path(key))
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not an object: %w", engine.ErrNotFound)
	}
	if err != nil {
		return engine.ObjectInfo{}, fmt.Errorf("dirstore: head %q: %w", key, notFound(err))
	}
	return engine.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime().UTC()}, nil
}

// Delete implements engine.ObjectStore. It then removes the directories the key leaves empty,
// so the tree does not fill with the skeletons of purged snapshots.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("dirstore: delete %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dirstore: delete %q: %w", key, err)
	}
	p := s.path(key)
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		// A prefix of other keys, not an object: nothing to delete.
		return nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
		return fmt.Errorf("dirstore: delete %q: %w", key, err)
	}
	for dir := filepath.Dir(p); dir != s.root && strings.HasPrefix(dir, s.root); dir = filepath.Dir(dir) {
		// Fails (and stops the pruning) as soon as a directory still holds something.
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// List implements engine.ObjectStore: every object whose key starts with prefix (a plain string
// prefix, as in S3: "a/b" also lists "a/bc/d"), sorted by key.
func (s *Store) List(ctx context.Context, prefix string) ([]engine.ObjectInfo, error) {
	fail := func(err error) ([]engine.ObjectInfo, error) {
		return nil, fmt.Errorf("dirstore: list %q: %w", prefix, err)
	}
	if strings.HasPrefix(prefix, "/") || strings.IndexByte(prefix, 0) >= 0 || strings.IndexByte(prefix, '\\') >= 0 {
		return fail(engine.ErrBadPath)
	}
	// Walk only the deepest directory the prefix names in full.
	base := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = prefix[:i]
		if err := checkKey(base); err != nil {
			return fail(err)
		}
	}
	start := s.root
	if base != "" {
		start = s.path(base)
	}
	var out []engine.ObjectInfo
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			// Deleted while listing.
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, engine.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime().UTC()})
		return nil
	})
	if err != nil {
		return fail(err)
	}
	// Walk order is per directory; "a.b" sorts before "a/x" as a key but after it in the walk.
	slices.SortFunc(out, func(a, b engine.ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
		return fmt.Errorf("%w (%v)", engine.ErrNotFound, err)
	}
	if isNotDir(err) {
		return fmt.Errorf("%w (%v)", engine.ErrNotFound, err)
	}
	return err
}

// isNotDir recognises ENOTDIR: "a/b" when "a" is an object is just another way of not existing.
func isNotDir(err error) bool {
	return errors.Is(err, syscall.ENOTDIR)
}
