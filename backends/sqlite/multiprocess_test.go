package sqlite

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

const (
	helperEnv  = "SAILTUI_SQLITE_CLAIM_HELPER" // db path for the child
	helperDir  = "SAILTUI_SQLITE_CLAIM_DIR"    // where children say they are ready and wait for "go"
	children   = 4
	raceRounds = 100
)

// TestMultiProcessClaims races real processes: POSIX file locks are per process, so this covers
// what two handles inside one process cannot. Every project must be claimed exactly once.
func TestMultiProcessClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "procs.db")
	s := openAt(t, path)
	defer s.Close()
	for i := range raceRounds {
		p := engine.Project{ID: fmt.Sprintf("p%02d", i), Slug: fmt.Sprintf("race-%02d", i), Status: engine.StatusActive}
		if err := s.CreateProject(t.Context(), p, nil, nil); err != nil {
			t.Fatal(err)
		}
	}

	barrier := t.TempDir()
	cmds := make([]*exec.Cmd, children)
	outs := make([]*bytes.Buffer, children)
	for i := range cmds {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestClaimHelperProcess$")
		cmd.Env = append(os.Environ(), helperEnv+"="+path, helperDir+"="+barrier, "SAILTUI_CHILD="+strconv.Itoa(i))
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	// Children start slowly (a race-instrumented binary each); release them together. A child
	// that died before it said it was ready must fail the test, not hang it.
	deadline := time.Now().Add(30 * time.Second)
	for ready := 0; ready < children; {
		ms, _ := filepath.Glob(filepath.Join(barrier, "ready-*"))
		if ready = len(ms); ready < children {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d children ready after 30 s", ready, children)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := os.WriteFile(filepath.Join(barrier, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	won := map[string]string{} // project -> winning op
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
		sc := bufio.NewScanner(outs[i])
		for sc.Scan() {
			proj, op, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "WON "), " ")
			if !ok || !strings.HasPrefix(sc.Text(), "WON ") {
				continue
			}
			if prev, dup := won[proj]; dup {
				t.Errorf("project %s claimed twice: by %s and %s", proj, prev, op)
			}
			won[proj] = op
		}
	}
	perChild := map[string]int{}
	for _, op := range won {
		child, _, _ := strings.Cut(op, "-")
		perChild[child]++
	}
	t.Logf("claims won per child: %v", perChild)
	for i := range raceRounds {
		id := fmt.Sprintf("p%02d", i)
		p, err := s.GetProject(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if won[id] == "" || p.OpID != won[id] {
			t.Errorf("project %s: held by %q, reported winner %q", id, p.OpID, won[id])
		}
	}
}

// TestClaimHelperProcess is the child of TestMultiProcessClaims; it does nothing on its own.
func TestClaimHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process for TestMultiProcessClaims")
	}
	barrier, child := os.Getenv(helperDir), os.Getenv("SAILTUI_CHILD")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.WriteFile(filepath.Join(barrier, "ready-"+child), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(barrier, "go")); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	n, _ := strconv.Atoi(child)
	for k := range raceRounds {
		// Odd children walk the projects backwards, so they also collide head-on mid-way.
		i := k
		if n%2 == 1 {
			i = raceRounds - 1 - k
		}
		id := fmt.Sprintf("p%02d", i)
		op := fmt.Sprintf("child%s-%02d", child, i)
		_, err := s.ClaimProject(t.Context(), id, engine.Claim{OpID: op, Kind: engine.OpHibernate, Owner: "child" + child,
			Now: time.Now(), From: []engine.ProjectStatus{engine.StatusActive}, To: engine.StatusHibernating})
		switch {
		case err == nil:
			fmt.Printf("WON %s %s\n", id, op)
		case !errors.Is(err, engine.ErrConflict):
			t.Fatalf("claim %s: %v", id, err)
		}
	}
}
