package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

type jsonDoctor struct {
	Findings []engine.Finding `json:"findings"`
}

func (d jsonDoctor) find(check, project string) *engine.Finding {
	for i, f := range d.Findings {
		if f.Check == check && (project == "" || f.Project == project) {
			return &d.Findings[i]
		}
	}
	return nil
}

// The doctor finds what the issue met (storage gone while the project said active, an
// operation whose holder was killed, an archive of no snapshot, a snapshot whose archive is
// gone), gives the command for each, and --fix sets right the safe ones without deleting.
func TestDoctor(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	if r := c.run("doctor"); r.code != 0 || !strings.Contains(r.stdout, "no findings") {
		t.Fatalf("doctor on a new state: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// lost: torn down from a ready hibernation snapshot, but the store says active (the
	// release was lost to a store fault).
	c.ok("project", "create", "lost", "--owner", "tester")
	c.ok("files", "put", "lost", "keep.txt")
	c.ok("project", "hibernate", "lost")
	p, _ := c.stored("lost")
	wakeFrom := p.HibernationSnapshot
	func() {
		eng := openTest(t, c.state, "fault")
		ctx := context.Background()
		op := "lost-release"
		claimed, err := eng.store.ClaimProject(ctx, p.ID, engine.Claim{OpID: op, Kind: engine.OpWake, Owner: "x", Now: p.UpdatedAt,
			From: []engine.ProjectStatus{engine.StatusHibernated}, To: engine.StatusActive})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.store.ReleaseProject(ctx, p.ID, engine.Release{OpID: op, Epoch: claimed.OpEpoch, To: engine.StatusActive, Now: p.UpdatedAt,
			SetHibernationSnapshot: true}); err != nil {
			t.Fatal(err)
		}
		eng.close()
	}()
	// What the issue saw: wake said "active" and exited 0 with no files behind it.
	if r := c.run("project", "wake", "lost"); r.code == 0 || !strings.Contains(r.stderr, "sailtui doctor") {
		t.Errorf("wake of an active project without storage: exit %d, %s; want a failure pointing at the doctor", r.code, r.stderr)
	}

	// stuck: a hibernation killed after its snapshot was written.
	c.ok("project", "create", "stuck", "--owner", "tester")
	c.ok("files", "put", "stuck", "keep.txt")
	c.crash("hibernate:snapshot-written", "project", "hibernate", "stuck")

	// An archive of no snapshot, and a manual snapshot whose archive is gone.
	c.ok("project", "create", "kept", "--owner", "tester")
	var snap struct {
		ID string `json:"id"`
	}
	c.json(&snap, "snapshot", "create", "kept")
	objects := filepath.Join(c.state, "objects")
	var snapObj string
	_ = filepath.WalkDir(objects, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), snap.ID) {
			snapObj = p
		}
		return nil
	})
	if snapObj == "" {
		t.Fatal("manual snapshot object not found")
	}
	must(t, os.Remove(snapObj))
	stray := filepath.Join(objects, "projects", "someone", "gone", "snap.tar.zst")
	must(t, os.MkdirAll(filepath.Dir(stray), 0o755))
	must(t, os.WriteFile(stray, []byte("old archive"), 0o644))

	d, code := doctorJSON(t, c, "doctor")
	if code != 1 {
		t.Fatalf("doctor with findings: exit %d, want 1", code)
	}
	for _, want := range []struct{ check, project, fix string }{
		{"storage", "lost", "sailtui project wake lost"},
		{"stuck-operation", "stuck", "doctor --fix"},
		{"missing-archive", "kept", "sailtui snapshot rm kept " + snap.ID},
		{"orphan-archive", "", "object store"},
	} {
		f := d.find(want.check, want.project)
		if f == nil {
			t.Errorf("no %s finding for %q in %+v", want.check, want.project, d.Findings)
			continue
		}
		if !strings.Contains(f.Fix, want.fix) {
			t.Errorf("%s finding's fix %q does not say %q", want.check, f.Fix, want.fix)
		}
	}
	if f := d.find("storage", "lost"); f != nil && !strings.Contains(f.Detail, wakeFrom) {
		t.Errorf("storage finding %q does not name the snapshot to wake from (%s)", f.Detail, wakeFrom)
	}

	fixed, code := doctorJSON(t, c, "doctor", "--fix")
	t.Logf("doctor --fix: exit %d: %+v", code, fixed.Findings)
	c.ok("project", "wake", "lost")
	if got := c.ok("files", "get", "lost", "keep.txt"); got != "" {
		t.Errorf("lost's file after the fix and a wake: %q", got)
	}
	if p, _ := c.stored("stuck"); p.Status != engine.StatusHibernated || p.OpID != "" {
		t.Errorf("stuck after --fix: %+v, want its hibernation finished", p)
	}
	d, _ = doctorJSON(t, c, "doctor")
	for _, f := range d.Findings {
		if f.Check == "storage" || f.Check == "stuck-operation" {
			t.Errorf("after --fix: %+v", f)
		}
	}
	// Nothing was deleted: the stray archive is still there for an operator to judge.
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("doctor --fix deleted the stray archive: %v", err)
	}
}

func doctorJSON(t *testing.T, c *cli, args ...string) (jsonDoctor, int) {
	t.Helper()
	r := c.runIn(nil, nil, append(args, "-o", "json")...)
	var d jsonDoctor
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("%v: %v\nstdout %s\nstderr %s", args, err, r.stdout, r.stderr)
	}
	return d, r.code
}
