package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCopies runs the check on a temporary copy of each vendored copy: it passes as the
// tree is (bubbletea's patches are applied with -p0, ultraviolet's with -p1), and on the first
// copy it fails, naming the file, when a byte of a patched or an unpatched file or of a .patch
// changes, a file is added or one is missing; without patch(1) it fails naming make deps.
func TestCheckCopies(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	mods, err := goModEdit(root)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range copies {
		version, err := mods.vendoredVersion(c)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := download(c.module, version)
		if err != nil {
			t.Fatal(err)
		}
		tmp := t.TempDir()
		if err := os.CopyFS(tmp, os.DirFS(filepath.Join(root, c.dir))); err != nil {
			t.Fatal(err)
		}
		c.dir = tmp
		expect := func(what, file string, wants ...string) {
			t.Helper()
			problems, err := check(c, version, rel)
			if err != nil {
				t.Fatal(err)
			}
			if file == "" {
				if len(problems) > 0 {
					t.Fatalf("%s: %s", what, strings.Join(problems, "\n"))
				}
				return
			}
			if len(problems) != 1 || !strings.Contains(problems[0], file) {
				t.Fatalf("%s: want one problem naming %s, got %q", what, file, problems)
			}
			for _, w := range wants {
				if !strings.Contains(problems[0], w) {
					t.Fatalf("%s: %q does not say %q", what, problems[0], w)
				}
			}
		}
		expect(c.module+" as it is", "")
		if i > 0 {
			continue
		}
		flip := func(name string) (undo func()) {
			p := filepath.Join(tmp, name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			changed := append([]byte(nil), b...)
			changed[len(changed)/2] ^= 0x20
			if err := os.WriteFile(p, changed, 0o644); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		undo := flip("tea.go")
		expect("a byte of a patched file", "tea.go", "regenerate the patch", "tea.patch", "restore the file")
		undo()
		undo = flip("key.go")
		expect("a byte of an unpatched file", "key.go", "no .patch changes it", "restore it")
		undo()
		undo = flip("tea.patch")
		expect("a byte of a patch", "tea.go", "does not apply", "regenerate it", "FAILED") // FAILED: patch's own word
		undo()
		if err := os.WriteFile(filepath.Join(tmp, "extra.go"), []byte("package tea\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		expect("an added file", "extra.go", "remove it")
		if err := os.Remove(filepath.Join(tmp, "extra.go")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(tmp, "focus.go"), filepath.Join(t.TempDir(), "focus.go")); err != nil {
			t.Fatal(err)
		}
		expect("a missing file", "focus.go", "missing", "restore it")
		t.Run("without patch(1)", func(t *testing.T) {
			t.Setenv("PATH", t.TempDir())
			if _, err := check(c, version, rel); err == nil || !strings.Contains(err.Error(), "make deps") {
				t.Fatalf("%v, want an error naming make deps", err)
			}
		})
	}
}
