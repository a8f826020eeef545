package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"

// A patch of before: c becomes C, an x after f, the last line loses its newline.
const patchText = `--- x.go (v1)
+++ x.go (patched)
@@ -2,3 +2,3 @@
 b
-c
+C
 d
@@ -5,6 +5,7 @@
 e
 f
+x
 g
 h
 i
-j
+j
\ No newline at end of file
`

const after = "a\nb\nC\nd\ne\nf\nx\ng\nh\ni\nj"

func TestPatchApplies(t *testing.T) {
	fps, err := parsePatch([]byte(patchText))
	if err != nil {
		t.Fatal(err)
	}
	if len(fps) != 1 || fps[0].name != "x.go" || len(fps[0].hunks) != 2 {
		t.Fatalf("parsed %+v", fps)
	}
	fp := fps[0]
	if got, err := fp.apply([]byte(before), false); err != nil || string(got) != after {
		t.Fatalf("apply: %q, %v; want %q", got, err, after)
	}
	if got, err := fp.apply([]byte(after), true); err != nil || string(got) != before {
		t.Fatalf("reverse: %q, %v; want %q", got, err, before)
	}
	// Lines added above the hunks shift them, as in a newer release.
	if got, err := fp.apply([]byte("0\n0\n"+before), false); err != nil || string(got) != "0\n0\n"+after {
		t.Fatalf("shifted: %q, %v", got, err)
	}
	// Changed context does not match: no fuzz.
	if _, err := fp.apply([]byte(strings.Replace(before, "d\n", "D\n", 1)), false); err == nil || !strings.Contains(err.Error(), "1 of 2 hunks") {
		t.Fatalf("changed context: %v, want 1 of 2 hunks failing", err)
	}
	if _, err := fp.apply([]byte(after), false); err == nil {
		t.Fatal("the patch applied twice")
	}
	if _, err := parsePatch([]byte("--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n")); err == nil {
		t.Fatal("a hunk cut short parses")
	}
}

// TestCheckCopies runs the check on a temporary copy of each vendored copy: it passes as the
// tree is, and on the first copy it fails, naming the file, when a byte of a patched or an
// unpatched file changes, a file is added or one is missing.
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
		expect("a byte of a patch", "tea.go")
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
	}
}
