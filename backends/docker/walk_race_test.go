//go:build linux

package docker

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/archive/archivetest"
)

// TestSnapshotWalkUnderContainerSwap is the attack of a project's own code on a manual
// snapshot, in both storage modes: a container running as the unprivileged user keeps
// exchanging a directory of its tree with a symlink to a root-only directory of the host (which
// it cannot read itself) while snapshots are taken. A snapshot may fail because the tree changed under
// it, but one that is taken must hold nothing from outside the project (invariant 10).
func TestSnapshotWalkUnderContainerSwap(t *testing.T) {
	t.Parallel()
	for _, volumes := range []bool{false, true} {
		name := "hostdir"
		if volumes {
			name = "volume"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cli := dockertest.Client(t)
			cfg := testConfig(t, cli)
			cfg.Volumes = volumes
			r := newTestRuntime(t, cfg)
			store := &memStore{}
			vols := archive.NewSandwich(store, r, archive.SandwichOptions{})
			pr := newProject(t, r, "swap")
			web, _ := pr.serve("web", "web", nil)

			// Root-only, as a host secret is: the container cannot read it, only a walk
			// by root that follows the container's link could.
			outside := filepath.Join(t.TempDir(), "secret")
			if err := os.Mkdir(outside, 0o700); err != nil {
				t.Fatal(err)
			}
			for i := range 50 {
				name := fmt.Sprintf("secret-%d", i)
				if i < 4 {
					// The inside names and sizes, as an attacker who made the inside files
					// would arrange: a walk that opens a name on the wrong side of a swap then
					// finds nothing amiss.
					name = fmt.Sprintf("in-%d", i)
				}
				if err := os.WriteFile(filepath.Join(outside, name), []byte(fmt.Sprintf("OUTSIDE-DATA-%d\n", i)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if res := pr.exec(web, `mkdir -p race/d && for i in 0 1 2 3; do printf 'INSIDE--DATA-%d\n' $i > race/d/in-$i; done && ln -s "$1" race/l`, outside); res.ExitCode != 0 {
				t.Fatalf("set up the tree: exit %d, %s", res.ExitCode, res.Stderr)
			}
			if res := pr.exec(web, `cat race/l/in-0`); res.ExitCode == 0 {
				t.Fatalf("the container can read the host secret itself (%q): the test proves nothing", res.Stdout)
			}

			// The swapper goes in through the runtime like any file of the project, in an
			// excluded directory so that snapshots do not carry it.
			bin, err := os.Open(swapperBinary(t))
			if err != nil {
				t.Fatal(err)
			}
			err = r.WriteFile(t.Context(), pr.p, "web/.cache/swapper", bin)
			bin.Close()
			if err != nil {
				t.Fatalf("WriteFile swapper: %v", err)
			}
			if res := pr.exec(web, `chmod 755 .cache/swapper && id -u`); res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != fmt.Sprint(dockertest.UID) {
				t.Fatalf("the swapper must run as the container user %d: exit %d, uid %q, %s", dockertest.UID, res.ExitCode, res.Stdout, res.Stderr)
			}
			stopFile := filepath.Join(r.StorageDir(pr.p), "web", "race-stop")
			swapped := make(chan engine.ExecResult, 1)
			go func() {
				res, err := r.Exec(t.Context(), pr.p, web, engine.ExecRequest{
					Argv:    []string{".cache/swapper", "race-stop", "race/d", "race/l"},
					Timeout: 2 * time.Minute,
				})
				if err != nil {
					res.Stderr = []byte(err.Error())
					res.ExitCode = -1
				}
				swapped <- res
			}()
			waitFor(t, "the swapper to start", func() bool {
				select {
				case res := <-swapped:
					t.Fatalf("the swapper ended before it started: exit %d, %s", res.ExitCode, res.Stderr)
				default:
				}
				_, err := os.Lstat(stopFile + ".started")
				return err == nil
			})
			stopped := false
			stop := func() engine.ExecResult {
				if stopped {
					return engine.ExecResult{}
				}
				stopped = true
				if err := os.WriteFile(stopFile, nil, 0o644); err != nil {
					t.Errorf("stop the swapper: %v", err)
				}
				return <-swapped
			}
			defer stop()

			const maxRounds = 500
			deadline := time.Now().Add(20 * time.Second)
			var rounds, ok, changed, leaked int
			var firstLeak string
			var others []string
			for rounds < maxRounds && time.Now().Before(deadline) {
				rounds++
				snap, err := vols.Create(t.Context(), pr.p, engine.Snapshot{
					ID: fmt.Sprintf("race-%d", rounds), ProjectID: pr.p.ID, Owner: pr.p.Owner, Type: engine.SnapshotManual,
				})
				if err != nil {
					if strings.Contains(err.Error(), "changed while being archived") {
						changed++
					} else if len(others) < 3 {
						others = append(others, err.Error())
					} else {
						others = append(others[:3], "...")
					}
					continue
				}
				ok++
				store.mu.Lock()
				obj := store.m[snap.Location]
				delete(store.m, snap.Location)
				store.mu.Unlock()
				if bad := foreignInSnapshot(t, obj); len(bad) > 0 {
					leaked++
					if firstLeak == "" {
						firstLeak = strings.Join(bad[:min(len(bad), 4)], "; ")
					}
				}
			}
			res := stop()
			t.Logf("%d rounds: %d snapshots, %d refused as changed, other errors %q; swapper: exit %d, %s swaps; %d snapshots with outside data",
				rounds, ok, changed, others, res.ExitCode, bytes.TrimSpace(res.Stdout), leaked)
			if res.ExitCode != 0 {
				t.Errorf("the swapper failed: exit %d, %s", res.ExitCode, res.Stderr)
			}
			if leaked > 0 {
				t.Errorf("%d of %d snapshots held data from outside the project, first: %s", leaked, ok, firstLeak)
			}
			if len(others) > 0 {
				t.Errorf("snapshots failed with errors that do not say the tree changed: %q", others)
			}
			if ok == 0 {
				t.Errorf("no snapshot was taken, so nothing was checked")
			}
		})
	}
}

// foreignInSnapshot decodes a snapshot of the swap project and describes every entry of its
// race directory that is not the project's own, and any entry holding outside data.
func foreignInSnapshot(t *testing.T, obj []byte) []string {
	t.Helper()
	var bad []string
	archivetest.Entries(t, obj, func(h *tar.Header, data []byte) {
		if bytes.Contains(data, []byte("OUTSIDE")) {
			bad = append(bad, fmt.Sprintf("%s holds %q", h.Name, data))
			return
		}
		rest, inRace := strings.CutPrefix(strings.TrimSuffix(h.Name, "/"), "web/race/")
		if !inRace {
			return
		}
		dir, file := filepath.Split(rest)
		switch {
		case (rest == "d" || rest == "l") && (h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeSymlink):
		case (dir == "d/" || dir == "l/") && strings.HasPrefix(file, "in-") && h.Typeflag == tar.TypeReg:
		default:
			bad = append(bad, fmt.Sprintf("unexpected entry %q (type %c)", h.Name, h.Typeflag))
		}
	})
	return bad
}

// swapperSource is the program the container runs: it exchanges two paths (renameat2
// RENAME_EXCHANGE, so neither name is ever missing) until a stop file appears, in a tight loop
// and at slower paces in turn, and prints how many swaps it made. It says it has started with
// a second file, named after the stop file. The test image has no tool
// that exchanges.
const swapperSource = `package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	stop, a, b := os.Args[1], os.Args[2], os.Args[3]
	if err := os.WriteFile(stop+".started", nil, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	paces := []time.Duration{0, 10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond}
	start := time.Now()
	n := 0
	for ; ; n++ {
		if n%256 == 0 {
			if _, err := os.Lstat(stop); err == nil {
				break
			}
		}
		if pace := paces[int(time.Since(start)/(25*time.Millisecond))%len(paces)]; pace > 0 {
			time.Sleep(pace)
		}
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
			fmt.Fprintln(os.Stderr, "renameat2:", err)
			os.Exit(1)
		}
	}
	fmt.Println(n)
}
`

// swapperBinary builds swapperSource, statically (the test image has no C library), with this
// module's x/sys.
func swapperBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "swapper.go")
	if err := os.WriteFile(src, []byte(swapperSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "swapper")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the swapper: %v\n%s", err, out)
	}
	return bin
}
