package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 31, item 1: `project create --from DIR` works in kubernetes mode, as the README's first
// example does it: the tree lands in the project's volume through the file-manager pod with its
// contents, modes, links and empty directories, .tesslate/config.json declares the containers,
// and the app started from it serves the imported files.
func TestKubernetesNodeCreateFrom(t *testing.T) {
	t.Parallel()
	c, _ := nodeCLI(t, "")
	slug := "import-" + randSuffix(t)
	src := t.TempDir()
	files := map[string]string{
		"web/index.html":                     "<h1>imported</h1>\n",
		"web/nested/deep/data.json":          `{"k": 1}` + "\n",
		"web/name with spaces é.txt":         "spaces\n",
		"README.md":                          strings.Repeat("a long line of the readme\n", 4000),
		".tesslate/config.json":              `{"apps": {"web": {"directory": "web", "port": 8080, "start": "exec sailtui devserver --port \"$PORT\""}}}`,
		"web/.hidden":                        "hidden\n",
		"web/nested/deep/deeper/deepest.txt": "deepest\n",
	}
	writeFiles(t, src, files)
	if err := os.WriteFile(filepath.Join(src, "web/run.sh"), []byte("#!/bin/sh\necho run\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("index.html", filepath.Join(src, "web/home.html")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(src, "web/empty"), 0o755); err != nil {
		t.Fatal(err)
	}

	c.ok("project", "create", slug, "--from", src)
	for name, body := range files {
		if got := c.ok("files", "get", slug, name); got != body {
			t.Errorf("%s after the import: %d bytes %.40q, want %d bytes %.40q", name, len(got), got, len(body), body)
		}
	}
	var ls []struct {
		Path   string `json:"path"`
		Mode   string `json:"mode"`
		IsDir  bool   `json:"is_dir"`
		Target string `json:"target"`
	}
	c.json(&ls, "files", "ls", slug, "web")
	seen := map[string]string{}
	for _, f := range ls {
		seen[filepath.Base(f.Path)] = f.Mode + " " + f.Target
	}
	for name, want := range map[string]string{"run.sh": "-rwxr-xr-x ", "home.html": "index.html", "empty": "drwx"} {
		if got, ok := seen[name]; !ok || !strings.Contains(got, want) {
			t.Errorf("web/%s after the import: %q, want %q in it (listing %+v)", name, got, want, ls)
		}
	}
	for name := range seen {
		if strings.HasPrefix(name, ".sailtui-") {
			t.Errorf("the import left %s in the project", name)
		}
	}
	if top := c.ok("files", "ls", slug); strings.Contains(top, ".sailtui-") {
		t.Errorf("the import left its working files at the top of the project:\n%s", top)
	}

	// The containers came from the imported config, and the app serves the imported files.
	c.ok("project", "start", slug)
	waitState(t, c, slug, "web", "running")
	if got := c.ok("exec", slug, "web", "--", "cat", "index.html"); got != files["web/index.html"] {
		t.Errorf("the app's directory holds %q, want the imported index.html", got)
	}
}
