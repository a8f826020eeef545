// Command vendorcheck checks that each patched copy of a module under ui/third_party is the
// released module plus its .patch files, nothing else (`make lint`), and with -upstream says
// whether a newer release exists and whether the patches still apply to it
// (`make check-upstream`). Run it from the repository's root. It is a tool of the build; no
// part of sailtui imports it.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A vendored copy: the module it is, its directory (the root go.mod's replace points there)
// and the files sailtui adds to it on purpose. Everything else in it must be the release's
// (see kept) with the copy's .patch files applied.
type vendored struct {
	module string
	dir    string
	own    []string
}

var copies = []vendored{
	{
		module: "charm.land/bubbletea/v2",
		dir:    "ui/third_party/bubbletea",
		own:    []string{"PATCH.md", "tea.patch", "cursed_renderer.patch", "pacing_test.go", "changed_lines_test.go"},
	},
	{
		module: "github.com/charmbracelet/ultraviolet",
		dir:    "ui/third_party/ultraviolet",
		own:    []string{"PATCH.md", "ultraviolet.patch", "overwrite_move_test.go"},
	},
}

// kept says whether a copy holds a file of the release (a path relative to its root): its
// non-test Go files, go.mod, go.sum and LICENSE; not its tests, testdata, docs or dot files.
func kept(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") || part == "testdata" {
			return false
		}
	}
	switch rel {
	case "go.mod", "go.sum", "LICENSE":
		return true
	}
	return strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go")
}

func main() {
	upstream := flag.Bool("upstream", false, "say whether a newer release exists and whether the patches apply to it")
	flag.Parse()
	mods, err := goModEdit(".")
	if err != nil {
		fatal(err)
	}
	failed := false
	for _, c := range copies {
		version, err := mods.vendoredVersion(c)
		if err != nil {
			fatal(err)
		}
		if *upstream {
			if err := checkUpstream(os.Stdout, c, version); err != nil {
				fatal(err)
			}
			continue
		}
		rel, err := download(c.module, version)
		if err != nil {
			fatal(err)
		}
		problems, err := check(c, version, rel)
		if err != nil {
			fatal(err)
		}
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "vendorcheck:", p)
			failed = true
		}
	}
	if failed {
		fmt.Fprintln(os.Stderr, "vendorcheck: each copy must be its release plus its .patch files (ui/third_party/vendorcheck)")
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "vendorcheck:", err)
	os.Exit(2)
}

// check compares c's copy with the release in relDir plus c's patches and returns what
// differs, each with what to do about it.
func check(c vendored, version, relDir string) ([]string, error) {
	var problems []string
	mv := c.module + "@" + version
	if md, err := os.ReadFile(filepath.Join(c.dir, "PATCH.md")); err == nil && !bytes.Contains(md, []byte(version)) {
		problems = append(problems, fmt.Sprintf("%s/PATCH.md does not name %s, the version go.mod asks for: say which release the copy is", c.dir, version))
	}

	// What the copy should hold: the release's kept files, patched by patch(1) in a copy of it.
	tmp, err := os.MkdirTemp("", "vendorcheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(tmp, os.DirFS(relDir)); err != nil { // the module cache's files are read-only; the copies are not
		return nil, err
	}
	patchOf := map[string]string{}
	unpatchable := map[string]bool{} // files a patch names but does not apply to: said once
	patches, _ := filepath.Glob(filepath.Join(c.dir, "*.patch"))
	slices.Sort(patches)
	for _, p := range patches {
		names, strip, err := patchFiles(p)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			problems = append(problems, fmt.Sprintf("%s names no file (no \"+++ \" header): regenerate it", p))
			continue
		}
		skip := false
		for _, name := range names {
			if !kept(name) {
				problems = append(problems, fmt.Sprintf("%s edits %s, which the copy leaves out", p, name))
				skip = true
			}
		}
		if skip {
			continue
		}
		out, ok, err := runPatch(tmp, p, strip)
		if err != nil {
			return nil, err
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s does not apply to %s of %s: regenerate it: %s; patch says:\n    %s",
				p, strings.Join(names, ", "), mv, diffCmd(relDir, c.dir, p, names...), strings.ReplaceAll(out, "\n", "\n    ")))
			for _, name := range names {
				unpatchable[name] = true
			}
			continue
		}
		for _, name := range names {
			patchOf[name] = p
		}
	}
	want := map[string][]byte{}
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := filepath.ToSlash(must(filepath.Rel(tmp, p)))
		if kept(rel) {
			want[rel], err = os.ReadFile(p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}

	// What it holds.
	own := map[string]bool{}
	for _, f := range c.own {
		own[f] = true
		if _, err := os.Stat(filepath.Join(c.dir, f)); err != nil {
			problems = append(problems, fmt.Sprintf("%s/%s is missing: it is one of the files the copy adds (restore it, or take it out of vendorcheck's list)", c.dir, f))
		}
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := filepath.ToSlash(must(filepath.Rel(c.dir, p)))
		if own[rel] {
			return nil
		}
		exp, ok := want[rel]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is not a file of %s the copy keeps: remove it, or if sailtui adds it on purpose, list it in ui/third_party/vendorcheck (copies)", p, mv))
			return nil
		}
		seen[rel] = true
		if unpatchable[rel] {
			return nil
		}
		got, err := os.ReadFile(p)
		if err != nil || bytes.Equal(got, exp) {
			return err
		}
		line := firstDiffLine(got, exp)
		if pf, ok := patchOf[rel]; ok {
			problems = append(problems, fmt.Sprintf("%s differs from %s plus %s (first at line %d): if the change is meant, regenerate the patch: %s; if not, restore the file: cat %s > %s && patch %s %s",
				p, mv, filepath.Base(pf), line, diffCmd(relDir, c.dir, pf, rel), filepath.Join(relDir, rel), p, p, pf))
		} else {
			problems = append(problems, fmt.Sprintf("%s differs from %s (first at line %d) and no .patch changes it: restore it: cat %s > %s; or, if the change is meant, add a patch (%s) and say why in PATCH.md",
				p, mv, line, filepath.Join(relDir, rel), p, diffCmd(relDir, c.dir, filepath.Join(c.dir, "NAME.patch"), rel)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var missing []string
	for rel := range want {
		if !seen[rel] {
			missing = append(missing, rel)
		}
	}
	slices.Sort(missing)
	for _, rel := range missing {
		problems = append(problems, fmt.Sprintf("%s/%s of %s is missing from the copy: restore it: cat %s > %s/%s", c.dir, rel, mv, filepath.Join(relDir, rel), c.dir, rel))
	}
	return problems, nil
}

// diffCmd is the command that writes the change of the files rels as a patch the checker reads
// (with patch -p1).
func diffCmd(relDir, copyDir, patch string, rels ...string) string {
	var diffs []string
	for _, rel := range rels {
		abs, err := filepath.Abs(filepath.Join(copyDir, rel))
		if err != nil {
			abs = filepath.Join(copyDir, rel)
		}
		diffs = append(diffs, fmt.Sprintf("diff -u --label a/%s --label b/%s %s %s", rel, rel, rel, abs))
	}
	return fmt.Sprintf("(cd %s && %s) > %s", relDir, strings.Join(diffs, "; "), patch)
}

// patchFiles reads the files a unified diff edits (its "+++ " headers, each after a "--- "
// line) and the -p level patch(1) needs to find them in the release's root: 1 when every
// header names a/NAME and b/NAME (diff --label a/NAME --label b/NAME, git diff), else 0
// ("--- tea.go (v2.1.1)").
func patchFiles(patchFile string) (names []string, strip int, err error) {
	data, err := os.ReadFile(patchFile)
	if err != nil {
		return nil, 0, err
	}
	name := func(header string) string {
		header, _, _ = strings.Cut(header, "\t")
		header, _, _ = strings.Cut(header, " ")
		return header
	}
	strip = 1
	lines := strings.Split(string(data), "\n")
	for i := 1; i < len(lines); i++ {
		oldH, ok1 := strings.CutPrefix(lines[i-1], "--- ")
		newH, ok2 := strings.CutPrefix(lines[i], "+++ ")
		if !ok1 || !ok2 {
			continue
		}
		names = append(names, name(newH))
		if !strings.HasPrefix(name(oldH), "a/") || !strings.HasPrefix(name(newH), "b/") {
			strip = 0
		}
	}
	if strip == 1 {
		for i := range names {
			names[i] = strings.TrimPrefix(names[i], "b/")
		}
	}
	return names, strip, nil
}

// runPatch applies patchFile to the tree in dir with GNU patch, given more flags ("--dry-run":
// only say whether it would apply; "-R": reverse it). ok is whether every hunk applied; out is
// what patch said. err is for patch missing or failing to run, not for a patch that does not
// apply.
func runPatch(dir, patchFile string, strip int, flags ...string) (out string, ok bool, err error) {
	abs, err := filepath.Abs(patchFile) // patch reads -i after changing to -d
	if err != nil {
		return "", false, err
	}
	args := append([]string{"--batch", "--forward", "--no-backup-if-mismatch", fmt.Sprintf("-p%d", strip), "-d", dir, "-i", abs}, flags...)
	cmd := exec.Command("patch", args...)
	b, err := cmd.CombinedOutput()
	out = strings.TrimRight(string(b), "\n")
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out, true, nil
	case errors.As(err, &exit):
		return out, false, nil
	case errors.Is(err, exec.ErrNotFound):
		return "", false, fmt.Errorf("GNU patch is not installed (%v): run make deps, which installs it (the Debian package patch)", err)
	}
	return out, false, fmt.Errorf("patch %s: %v: %s", strings.Join(args, " "), err, out)
}

func firstDiffLine(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return 1 + bytes.Count(a[:i], []byte("\n"))
}

// checkUpstream reports the newest release of c's module and, when it is newer than the
// vendored one, whether each patch applies to it or the release already has the change.
func checkUpstream(w *os.File, c vendored, version string) error {
	latest, err := goListModule(c.module + "@latest")
	if err != nil {
		return err
	}
	cur, err := goListModule(c.module + "@" + version)
	if err != nil {
		return err
	}
	day := func(t time.Time) string { return t.Format("2006-01-02") }
	switch {
	case latest.Version == version:
		fmt.Fprintf(w, "%s: the vendored %s (%s) is the newest release\n", c.module, version, day(cur.Time))
		return nil
	case !latest.Time.After(cur.Time):
		fmt.Fprintf(w, "%s: the newest release, %s (%s), is not newer than the vendored %s (%s)\n", c.module, latest.Version, day(latest.Time), version, day(cur.Time))
		return nil
	}
	fmt.Fprintf(w, "%s: %s (%s) is newer than the vendored %s (%s)\n", c.module, latest.Version, day(latest.Time), version, day(cur.Time))
	dir, err := download(c.module, latest.Version)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "vendorcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
		return err
	}
	patches, _ := filepath.Glob(filepath.Join(c.dir, "*.patch"))
	slices.Sort(patches)
	for _, p := range patches {
		names, strip, err := patchFiles(p)
		if err != nil {
			return err
		}
		files := strings.Join(names, ", ")
		out, fwd, err := runPatch(tmp, p, strip, "--dry-run")
		if err != nil {
			return err
		}
		_, rev, err := runPatch(tmp, p, strip, "--dry-run", "-R")
		if err != nil {
			return err
		}
		switch {
		case rev:
			fmt.Fprintf(w, "  %s: %s of %s already has this change (the patch reverses cleanly)\n", filepath.Base(p), files, latest.Version)
		case fwd:
			fmt.Fprintf(w, "  %s: applies to %s of %s (the release does not have the change)\n", filepath.Base(p), files, latest.Version)
		default:
			fmt.Fprintf(w, "  %s: does not apply to %s of %s: upstream changed this code; port the patch by hand; patch says:\n    %s\n",
				filepath.Base(p), files, latest.Version, strings.ReplaceAll(out, "\n", "\n    "))
		}
	}
	return nil
}

// modFile is the part of `go mod edit -json` the check reads.
type modFile struct {
	Require []struct{ Path, Version string }
	Replace []struct {
		Old, New struct{ Path, Version string }
	}
}

// vendoredVersion is the version go.mod requires of c's module; go.mod must replace it with c's
// directory.
func (m modFile) vendoredVersion(c vendored) (string, error) {
	replaced := false
	for _, r := range m.Replace {
		if r.Old.Path == c.module {
			if filepath.Clean(r.New.Path) != filepath.Clean(c.dir) {
				return "", fmt.Errorf("go.mod replaces %s with %s, not the copy in %s", c.module, r.New.Path, c.dir)
			}
			replaced = true
		}
	}
	if !replaced {
		return "", fmt.Errorf("go.mod does not replace %s with ./%s: the copy is not used (delete it and its entry in vendorcheck, or add the replace)", c.module, c.dir)
	}
	for _, r := range m.Require {
		if r.Path == c.module {
			return r.Version, nil
		}
	}
	return "", fmt.Errorf("go.mod does not require %s", c.module)
}

func goModEdit(dir string) (modFile, error) {
	var m modFile
	out, err := goCmd(dir, "mod", "edit", "-json")
	if err == nil {
		err = json.Unmarshal(out, &m)
	}
	return m, err
}

// download fetches module@version into the module cache (from the proxy if it is not there)
// and returns its directory.
func download(module, version string) (string, error) {
	var m struct{ Dir, Error string }
	out, err := goCmd(os.TempDir(), "mod", "download", "-json", module+"@"+version)
	if jerr := json.Unmarshal(out, &m); jerr == nil && m.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, m.Error)
	}
	if err != nil {
		return "", err
	}
	if m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s printed no Dir", module, version)
	}
	return m.Dir, nil
}

type moduleInfo struct {
	Version string
	Time    time.Time
}

func goListModule(query string) (moduleInfo, error) {
	var m moduleInfo
	out, err := goCmd(os.TempDir(), "list", "-m", "-json", query)
	if err == nil {
		err = json.Unmarshal(out, &m)
	}
	return m, err
}

// goCmd runs the go command in dir: outside the repository for queries, so that they never
// touch its go.mod or go.sum.
func goCmd(dir string, args ...string) ([]byte, error) {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, err
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
