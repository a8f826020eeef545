package runtimetest

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

var fileTests = []test{
	{"RoundTrip", testFilesRoundTrip},
	{"List", testFilesList},
	{"Delete", testFilesDelete},
	{"Missing", testFilesMissing},
	{"SymlinkInside", testFilesSymlinkInside},
	{"HostilePaths", testFilesHostilePaths},
}

func testFilesRoundTrip(t *testing.T, e *env) {
	cases := map[string]string{
		"a.txt":                "alpha\n",
		"deep/er/still/b.txt":  "created with its parents\n",
		"empty":                "",
		"with space/ü n i.txt": "unicode name\n",
		"bin.dat":              string([]byte{0, 1, 2, 255, '\n', 0}),
		"./dot/./clean.txt":    "cleaned path\n",
		"big.txt":              strings.Repeat("0123456789abcdef", 1<<16),
	}
	for name, content := range cases {
		e.write(name, content)
		if got := e.read(name); got != content {
			t.Errorf("%q reads back %d bytes, want %d", name, len(got), len(content))
		}
	}
	e.write("a.txt", "replaced\n")
	if got := e.read("a.txt"); got != "replaced\n" {
		t.Errorf("overwritten file reads %q", got)
	}
	if got := e.read("dot/clean.txt"); got != "cleaned path\n" {
		t.Errorf("dot/clean.txt reads %q", got)
	}
}

func names(fs []engine.FileInfo) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Path
	}
	slices.Sort(out)
	return out
}

func testFilesList(t *testing.T, e *env) {
	e.write("top.txt", "12345")
	e.write("dir/inner.txt", "abc")
	e.write("dir/sub/leaf.txt", "x")
	for _, root := range []string{"", "."} {
		got, err := e.rt.ListFiles(e.ctx(), e.p, root)
		if err != nil {
			t.Fatalf("ListFiles(%q): %v", root, err)
		}
		if n := names(got); !slices.Equal(n, []string{"dir", "top.txt"}) {
			t.Fatalf("ListFiles(%q) = %v, want [dir top.txt]", root, n)
		}
		for _, f := range got {
			switch f.Path {
			case "dir":
				if !f.IsDir {
					t.Errorf("dir listed as %+v", f)
				}
			case "top.txt":
				if f.IsDir || f.Size != 5 || f.Mode == "" || f.ModTime.IsZero() {
					t.Errorf("top.txt listed as %+v", f)
				}
			}
		}
	}
	got, err := e.rt.ListFiles(e.ctx(), e.p, "dir")
	if err != nil {
		t.Fatalf("ListFiles(dir): %v", err)
	}
	if n := names(got); !slices.Equal(n, []string{"dir/inner.txt", "dir/sub"}) {
		t.Errorf("ListFiles(dir) = %v, want paths relative to the project root", n)
	}
	if _, err := e.rt.ListFiles(e.ctx(), e.p, "top.txt"); err == nil {
		t.Errorf("ListFiles of a file succeeded")
	}
}

func testFilesDelete(t *testing.T, e *env) {
	e.write("gone.txt", "x")
	e.write("tree/a/b.txt", "x")
	e.write("tree/c.txt", "x")
	e.write("stay.txt", "x")
	for _, name := range []string{"gone.txt", "tree"} {
		if err := e.rt.DeleteFile(e.ctx(), e.p, name); err != nil {
			t.Fatalf("DeleteFile(%q): %v", name, err)
		}
	}
	got, err := e.rt.ListFiles(e.ctx(), e.p, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); !slices.Equal(n, []string{"stay.txt"}) {
		t.Errorf("after deletes the project holds %v, want [stay.txt]", n)
	}
	err = e.rt.DeleteFile(e.ctx(), e.p, "gone.txt")
	wantErr(t, "DeleteFile of a missing file", err, engine.ErrNotFound)
	for _, root := range []string{"", ".", "./"} {
		err := e.rt.DeleteFile(e.ctx(), e.p, root)
		wantErr(t, "DeleteFile of the project root "+strconv.Quote(root), err, engine.ErrBadPath)
	}
	if got := e.read("stay.txt"); got != "x" {
		t.Errorf("stay.txt reads %q after refused deletes", got)
	}
}

func testFilesMissing(t *testing.T, e *env) {
	var b bytes.Buffer
	err := e.rt.ReadFile(e.ctx(), e.p, "nope.txt", &b)
	wantErr(t, "ReadFile of a missing file", err, engine.ErrNotFound)
	_, err = e.rt.ListFiles(e.ctx(), e.p, "nodir")
	wantErr(t, "ListFiles of a missing directory", err, engine.ErrNotFound)
}

func testFilesSymlinkInside(t *testing.T, e *env) {
	c := e.shell("sh", ".")
	e.write("real/target.txt", "through the link\n")
	e.sh(c, "ln -s real/target.txt alias.txt && ln -s real realdir && mkdir -p nested && ln -s ../real/target.txt nested/up-and-in.txt")
	for _, name := range []string{"alias.txt", "realdir/target.txt", "nested/up-and-in.txt"} {
		if got := e.read(name); got != "through the link\n" {
			t.Errorf("ReadFile(%q) = %q", name, got)
		}
	}
	// Writing through a link writes its target and keeps the link.
	e.write("alias.txt", "rewritten\n")
	if got := e.read("real/target.txt"); got != "rewritten\n" {
		t.Errorf("target after writing through the link: %q", got)
	}
	got, err := e.rt.ListFiles(e.ctx(), e.p, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		if f.Path == "alias.txt" && f.Target != "real/target.txt" {
			t.Errorf("alias.txt listed as %+v, want a symlink to real/target.txt", f)
		}
	}
	if l, err := e.rt.ListFiles(e.ctx(), e.p, "realdir"); err != nil || len(l) != 1 {
		t.Errorf("ListFiles through a directory link = %v, %v", l, err)
	}
}

// testFilesHostilePaths is invariant 8: nothing a caller names reaches outside the project.
func testFilesHostilePaths(t *testing.T, e *env) {
	c := e.shell("sh", ".")
	victim := "sailtui-victim-" + e.token
	marker := "sailtui-pwned-" + e.token
	// Outside the project: a file beside the project's directory, made by a shell that may
	// go anywhere (file operations may not).
	e.sh(c, "echo original > ../"+victim)
	t.Cleanup(func() {
		_, _ = e.rt.Exec(context.Background(), e.p, c, engine.ExecRequest{Argv: []string{"rm", "-f", "../" + victim}})
	})
	e.sh(c, "ln -s /etc esc-abs && ln -s .. up && ln -s ../"+victim+" victim-link && mkdir -p a && ln -s ../.. a/up2")

	type op struct {
		name string
		do   func(path string) error
	}
	ops := map[string]op{
		"read": {"ReadFile", func(p string) error {
			var b bytes.Buffer
			err := e.rt.ReadFile(e.ctx(), e.p, p, &b)
			if err == nil && b.Len() > 0 {
				t.Errorf("ReadFile(%q) returned %d bytes from outside", p, b.Len())
			}
			return err
		}},
		"write": {"WriteFile", func(p string) error {
			return e.rt.WriteFile(e.ctx(), e.p, p, strings.NewReader(marker+"\n"))
		}},
		"delete": {"DeleteFile", func(p string) error { return e.rt.DeleteFile(e.ctx(), e.p, p) }},
		"list": {"ListFiles", func(p string) error {
			_, err := e.rt.ListFiles(e.ctx(), e.p, p)
			return err
		}},
	}
	all := []string{"read", "write", "delete", "list"}
	cases := []struct {
		path string
		ops  []string
	}{
		{"../x", all},
		{"../" + victim, all},
		{"/etc/passwd", all},
		{"/", all},
		{"a/../../x", all},
		{"a/../b", all}, // ".." is refused even when it would stay inside
		{"..", all},
		{"a\x00b", all},
		{"esc-abs/passwd", all},
		{"esc-abs/" + marker, all},
		{"up/" + victim, all},
		{"up", []string{"read", "write", "list"}},
		{"a/up2/" + victim, all},
		{"victim-link", []string{"read", "write"}},
	}
	for _, tc := range cases {
		for _, o := range tc.ops {
			err := ops[o].do(tc.path)
			wantErr(t, ops[o].name+"("+strconv.Quote(tc.path)+")", err, engine.ErrBadPath)
		}
	}

	// Nothing outside was touched.
	if got := e.sh(c, "cat ../"+victim); got != "original\n" {
		t.Errorf("file outside the project now reads %q", got)
	}
	if got := e.sh(c, "if [ -e ../x ]; then echo exists; fi; grep -l "+marker+" /etc/passwd /etc/"+marker+" 2>/dev/null; true"); got != "" {
		t.Errorf("outside the project: %q", got)
	}

	// Deleting a link removes the link, not what it points to.
	for _, link := range []string{"victim-link", "esc-abs", "up"} {
		if err := e.rt.DeleteFile(e.ctx(), e.p, link); err != nil {
			t.Errorf("DeleteFile of the link %q: %v", link, err)
		}
	}
	if got := e.sh(c, "cat ../"+victim+"; test -f /etc/passwd && echo etc-ok"); got != "original\netc-ok\n" {
		t.Errorf("after deleting links, outside reads %q", got)
	}
}
