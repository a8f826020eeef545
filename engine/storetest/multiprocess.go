package storetest

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

// The multi-process claim race: real processes, each with its own handle (its own pool, its
// own POSIX file locks), claim the same projects in clashing orders; every project must be
// claimed exactly once. A store's package runs it with two tests of its own, one that starts
// the race (RunMultiProcessClaims) and the child the race re-executes (MultiProcessClaimChild).

const (
	helperEnv   = "SAILTUI_STORETEST_CLAIM_TARGET" // what open is given in the child
	helperDir   = "SAILTUI_STORETEST_CLAIM_DIR"    // where children say they are ready and wait for "go"
	helperChild = "SAILTUI_STORETEST_CHILD"
	children    = 4
	raceRounds  = 100
)

// RunMultiProcessClaims creates the projects in the store open(target) gives and races
// children against it. childTest names the test that calls MultiProcessClaimChild.
func RunMultiProcessClaims(t *testing.T, target, childTest string, open func(t *testing.T, target string) engine.Store) {
	s := open(t, target)
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
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+childTest+"$")
		cmd.Env = append(os.Environ(), helperEnv+"="+target, helperDir+"="+barrier, helperChild+"="+strconv.Itoa(i))
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
			rest, ok := strings.CutPrefix(sc.Text(), "WON ")
			if !ok {
				continue
			}
			proj, op, _ := strings.Cut(rest, " ")
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

// MultiProcessClaimChild is the child of RunMultiProcessClaims: it reports whether it is one
// (false: the test calling it should return at once) and, if so, claims every project.
func MultiProcessClaimChild(t *testing.T, open func(t *testing.T, target string) engine.Store) bool {
	target := os.Getenv(helperEnv)
	if target == "" {
		return false
	}
	barrier, child := os.Getenv(helperDir), os.Getenv(helperChild)
	s := open(t, target)
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
	return true
}
