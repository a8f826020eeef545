package engine_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// Issue 30, item 2: storage that was only missing for a while (an unmounted disk). doctor
// --fix points the project at its newest hibernation snapshot and says which and how old; when
// the storage comes back doctor reports it, and a wake keeps it as a safety snapshot before it
// restores: the writes made after that snapshot come back with one restore.
func TestStorageBackAfterDoctorFix(t *testing.T) {
	ctx := context.Background()
	p := openTest(t, t.TempDir(), "test")
	pr, err := p.eng.CreateProject(ctx, engine.CreateRequest{Name: "disk"})
	must(t, err)
	put := func(path, content string) {
		t.Helper()
		must(t, p.eng.WriteFile(ctx, pr.Slug, path, strings.NewReader(content)))
	}
	read := func(path string) string {
		t.Helper()
		var b strings.Builder
		if err := p.eng.ReadFile(ctx, pr.Slug, path, &b); err != nil {
			return "<" + err.Error() + ">"
		}
		return b.String()
	}
	put("a.txt", "a\n")
	_, err = p.eng.Hibernate(ctx, pr.Slug)
	must(t, err)
	_, err = p.eng.Wake(ctx, pr.Slug)
	must(t, err)
	hib, err := p.eng.Snapshots(ctx, pr.Slug, false)
	must(t, err)
	hibID := hib[slices.IndexFunc(hib, func(s engine.Snapshot) bool { return s.Type == engine.SnapshotHibernation })].ID
	put("b.txt", "b\n")
	manual, err := p.eng.CreateSnapshot(ctx, pr.Slug, "newer manual")
	must(t, err)
	put("c.txt", "acknowledged after every snapshot\n")

	// The disk goes away.
	dir := p.dirs()(pr)
	must(t, os.Rename(dir, dir+".unmounted"))
	rep, err := p.eng.Doctor(ctx, true)
	must(t, err)
	i := slices.IndexFunc(rep.Findings, func(f engine.Finding) bool { return f.Check == "storage" && f.Project == pr.Slug })
	if i < 0 || !rep.Findings[i].Fixed {
		t.Fatalf("doctor --fix with the storage gone: %+v", rep.Findings)
	}
	if f := rep.Findings[i]; !strings.Contains(f.Detail, hibID) || !strings.Contains(f.Detail, "ago") || strings.Contains(f.Detail, manual.ID) {
		t.Errorf("doctor --fix chose %q; want the hibernation snapshot %s (not the newer manual %s), with its age", f.Detail, hibID, manual.ID)
	}

	// It comes back before anyone wakes the project.
	must(t, os.Rename(dir+".unmounted", dir))
	rep, err = p.eng.Doctor(ctx, false)
	must(t, err)
	if !slices.ContainsFunc(rep.Findings, func(f engine.Finding) bool {
		return f.Project == pr.Slug && strings.Contains(f.Detail, "hibernated, but its storage is present")
	}) {
		t.Errorf("doctor does not report the storage that came back: %+v", rep.Findings)
	}
	woke, err := p.eng.Wake(ctx, pr.Slug)
	must(t, err)
	if got := read("c.txt"); got == "acknowledged after every snapshot\n" {
		t.Fatalf("the wake restored nothing over the present tree")
	}
	snaps, err := p.eng.Snapshots(ctx, pr.Slug, false)
	must(t, err)
	k := slices.IndexFunc(snaps, func(s engine.Snapshot) bool {
		return s.Type == engine.SnapshotSafety && strings.Contains(woke.StatusReason, s.ID)
	})
	if k < 0 {
		t.Fatalf("the wake names no safety snapshot of the present files: reason %q, snapshots %+v", woke.StatusReason, snaps)
	}
	_, err = p.eng.RestoreSnapshot(ctx, pr.Slug, snaps[k].ID)
	must(t, err)
	for path, want := range map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "acknowledged after every snapshot\n"} {
		if got := read(path); got != want {
			t.Errorf("after restoring the safety snapshot %s = %q, want %q", path, got, want)
		}
	}
}
