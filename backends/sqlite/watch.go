package sqlite

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/fsnotify/fsnotify"

	"github.com/sailtui/sailtui/engine"
)

var _ engine.WriteWatcher = (*Store)(nil)

// WatchWrites tells of writes to the database by any process on this machine, from the
// kernel's notices of changes to the database file and its WAL (inotify on Linux), so a
// console can wait for a write instead of asking the store twice a second: while nothing is
// written it does no work at all.
//
// The directory is watched, not the files: SQLite deletes the WAL when the last connection
// closes and makes a new one on the next write, which a watch on the old file would miss.
// A notice the kernel dropped (its queue overflowed) or a watch error is passed on as a
// write; the channel closes when ctx ends or the watch stops working, and the reader then has
// to go back to asking.
func (s *Store) WatchWrites(ctx context.Context) (<-chan struct{}, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s for writes: %w", s.path, err)
	}
	dir := filepath.Dir(s.path)
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch %s for writes: %w", s.path, err)
	}
	names := map[string]bool{
		filepath.Clean(s.path):          true,
		filepath.Clean(s.path) + "-wal": true,
	}
	out := make(chan struct{}, 1)
	tell := func() {
		select {
		case out <- struct{}{}:
		default: // one already waits: it stands for this write too
		}
	}
	go func() {
		defer close(out)
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if names[filepath.Clean(ev.Name)] && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
					tell()
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				// Most likely the kernel's queue overflowed: some notice was lost.
				tell()
			}
		}
	}()
	return out, nil
}
