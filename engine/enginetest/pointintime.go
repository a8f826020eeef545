package enginetest

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine"
)

// Invariant 10: a manual snapshot, and the safety snapshot of a restore, of a project whose
// container rewrites its files all the time hold the tree of one moment, and none fails because
// a file changed under the walk.

// PairWriter is a container that never stops changing its tree, as a dev server rewriting its
// build output does: every round it renames a new counter into a, then the same counter into z,
// and rewrites big in place (truncate, then 1 MiB). At any one moment z <= a <= z+1 holds; a
// snapshot that is point in time shows exactly that. One that walks the tree while the loop
// runs reads a before the thousands of files of m/ and z after them, many rounds later, or
// has big change under it ("file shrank/grew while being archived"). Both exist before the
// first round, so that a snapshot of the first moments holds the pair too.
const PairWriter = `i=0
echo 0 > a.tmp && mv -f a.tmp a && echo 0 > z.tmp && mv -f z.tmp z
while :; do
  i=$((i+1))
  echo $i > a.tmp && mv -f a.tmp a
  echo $i > z.tmp && mv -f z.tmp z
  cp big.seed big
done`

// PointInTimeProject creates a project whose container writer runs PairWriter beside a tree
// large enough for the walk to take a while, starts it and waits until the writer runs.
func PointInTimeProject(t *testing.T, eng *engine.Engine, dirs ProjectDirs, name string) engine.Project {
	t.Helper()
	ctx := t.Context()
	p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: name, Owner: "tester",
		Containers: []engine.ContainerSpec{{Name: "writer", Directory: ".", Command: PairWriter}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := dirs(p)
	filler := strings.Repeat("package m // filler between a and z\n", 100)
	for i := range 3000 {
		sub := filepath.Join(dir, "m", fmt.Sprintf("d%02d", i/100))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.go", i)), []byte(filler), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seed := make([]byte, 1<<20)
	for i := range seed {
		seed[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.seed"), seed, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.StartProject(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	if p, err = eng.Project(ctx, p.Slug); err != nil {
		t.Fatal(err)
	}
	WaitWriter(t, dirs, p, 20*time.Second)
	// Until its first round has written z too, a snapshot may find a without z: that is a
	// moment of the tree, but not one the check below can tell from a torn walk.
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(dir, "z")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer container never wrote z")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

// WriterCounter reads the live counter of a (0 while it is being replaced or not there yet).
func WriterCounter(dirs ProjectDirs, p engine.Project) int {
	b, err := os.ReadFile(filepath.Join(dirs(p), "a"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// WaitWriter fails the test unless the writer's counter moves within d: the container runs.
func WaitWriter(t *testing.T, dirs ProjectDirs, p engine.Project, d time.Duration) {
	t.Helper()
	first := WriterCounter(dirs, p)
	deadline := time.Now().Add(d)
	for WriterCounter(dirs, p) <= first {
		if time.Now().After(deadline) {
			t.Fatalf("the writer container does not run: its counter stays at %d", first)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eachArchived calls fn with every entry of a snapshot's archive in the directory object store
// rooted at objects (the name without its "./"), and returns how many there were.
func eachArchived(t *testing.T, objects string, s engine.Snapshot, fn func(name string, r io.Reader)) int {
	t.Helper()
	f, err := os.Open(filepath.Join(objects, filepath.FromSlash(s.Location)))
	if err != nil {
		t.Fatalf("open archive of %s: %v", s.ID, err)
	}
	defer f.Close()
	return eachEntry(t, f, s.ID, fn)
}

// eachEntry is eachArchived over the archive r of snapshot id.
func eachEntry(t *testing.T, r io.Reader, id string, fn func(name string, r io.Reader)) int {
	t.Helper()
	zr, err := zstd.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatalf("read archive of %s: %v", id, err)
		}
		n++
		fn(strings.TrimPrefix(h.Name, "./"), tr)
	}
}

// archivedPair reads a and z out of a snapshot's archive in the directory object store rooted
// at objects.
func archivedPair(t *testing.T, objects string, s engine.Snapshot) (a, z int) {
	t.Helper()
	f, err := os.Open(filepath.Join(objects, filepath.FromSlash(s.Location)))
	if err != nil {
		t.Fatalf("open archive of %s: %v", s.ID, err)
	}
	defer f.Close()
	return ArchivedPair(t, f, s.ID)
}

// ArchivedPair reads the counters a and z of PairWriter out of the archive r (of snapshot id):
// -1 for one that is not in it.
func ArchivedPair(t *testing.T, r io.Reader, id string) (a, z int) {
	t.Helper()
	a, z = -1, -1
	eachEntry(t, r, id, func(name string, r io.Reader) {
		if name != "a" && name != "z" {
			return
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s in %s holds %q", name, id, b)
		}
		if name == "a" {
			a = n
		} else {
			z = n
		}
	})
	return a, z
}

func checkPointInTime(t *testing.T, objects string, s engine.Snapshot) {
	t.Helper()
	a, z := archivedPair(t, objects, s)
	if a < 0 || z < 0 || z > a || a > z+1 {
		t.Errorf("snapshot %s is not point in time: a=%d z=%d, want z <= a <= z+1", s.ID, a, z)
	}
}

// SnapshotsPointInTime takes manual snapshots of the running project of PointInTimeProject,
// then restores over it (each taking a safety snapshot of the live project), and checks every
// one. objects is the root of the directory object store the archives are written to.
func SnapshotsPointInTime(t *testing.T, eng *engine.Engine, dirs ProjectDirs, objects string, p engine.Project, rounds, restores int) {
	t.Helper()
	ctx := t.Context()

	var phases []string
	pctx := engine.WithProgress(ctx, func(pr engine.Progress) {
		if pr.Phase == "pause" || pr.Phase == "resume" {
			phases = append(phases, pr.Phase)
		}
	})
	var failed []string
	for i := range rounds {
		s, err := eng.CreateSnapshot(pctx, p.Slug, fmt.Sprintf("round %d", i))
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		checkPointInTime(t, objects, s)
		WaitWriter(t, dirs, p, 5*time.Second)
		if i < rounds-1 {
			if err := eng.DeleteSnapshot(ctx, p.Slug, s.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d manual snapshots of the running project failed:\n%s", len(failed), rounds, strings.Join(failed, "\n"))
	}
	if want := 2 * rounds; len(phases) != want || phases[0] != "pause" || phases[1] != "resume" {
		t.Errorf("progress phases %v, want pause/resume around each of the %d snapshots", phases, rounds)
	}

	// The safety snapshot of a restore over the live project is taken the same way.
	snaps, err := eng.Snapshots(ctx, p.Slug, false)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("timeline: %v, %v", snaps, err)
	}
	for range restores {
		res, err := eng.RestoreSnapshot(ctx, p.Slug, snaps[0].ID)
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		if res.Safety.ID == "" {
			t.Fatal("restore over the live project took no safety snapshot")
		}
		checkPointInTime(t, objects, res.Safety)
		// The restore starts the writer again on the restored tree.
		WaitWriter(t, dirs, p, 10*time.Second)
	}
}
