package volumestest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// storageUnder keeps each project's storage in <root>/projects/<id>.
type storageUnder string

func (d storageUnder) StorageDir(p engine.Project) string {
	return filepath.Join(string(d), "projects", p.ID)
}

// Sandwich is the Harness of archive.Sandwich over the object stores store returns (one per
// subtest, holding nothing else: the suite lists what a subtest left), for the tests of
// archive and of each ObjectStore worth running it over.
func Sandwich(store func(t *testing.T) engine.ObjectStore) Harness {
	return Harness{
		Store: store,
		New: func(t *testing.T, store engine.ObjectStore) *Env {
			dirs := storageUnder(t.TempDir())
			p := engine.Project{ID: "p1", Owner: "alice"}
			dir := dirs.StorageDir(p)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return &Env{
				Volumes: archive.NewSandwich(store, dirs, archive.SandwichOptions{}),
				Project: p,
				Dir:     dir,
				// A hibernated project: its storage, and even the directory above it, are gone.
				RemoveStorage: func(t *testing.T) {
					if err := archive.RemoveTree(filepath.Dir(dir)); err != nil {
						t.Fatal(err)
					}
				},
				// Restores work in siblings of the storage directory.
				Leftovers: func(t *testing.T) []string {
					entries, err := os.ReadDir(filepath.Dir(dir))
					if err != nil {
						return nil // gone with the storage
					}
					var left []string
					for _, e := range entries {
						if e.Name() != filepath.Base(dir) {
							left = append(left, e.Name())
						}
					}
					return left
				},
			}
		},
		Data:           true,
		Archive:        true,
		ProgressTotal:  true,
		MissingStorage: engine.ErrNotFound,
	}
}
