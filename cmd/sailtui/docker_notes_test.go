package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

// The three-tier example (testdata/example-notes, issue 34) in docker mode: a node page, a
// python API and a real PostgreSQL, each from images made of Debian's packages, wired by the
// connections of its .tesslate/config.json.

// exampleNotes copies testdata/example-notes into a temporary directory with the database's
// image set to pg (the keyed reference, so another checkout moving sailtui-postgres:15 to a
// build of its own changes nothing here).
func exampleNotes(t *testing.T, pg string) string {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "example-notes")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == filepath.Join(".tesslate", "config.json") {
			if !bytes.Contains(b, []byte(`"sailtui-postgres:15"`)) {
				return fmt.Errorf("%s no longer names sailtui-postgres:15", p)
			}
			b = bytes.ReplaceAll(b, []byte(`"sailtui-postgres:15"`), []byte(`"`+pg+`"`))
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy the example: %v", err)
	}
	return dst
}

// notesApp talks to the example as a browser does: everything through web's URL, with Host
// set when the URL is the router's.
type notesApp struct {
	t    *testing.T
	base string // http://host:port
	host string // the Host header; "" for base's own
}

func (a notesApp) do(method, path string, body []byte) (int, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if a.host != "" {
		req.Host = a.host
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	cl := http.Client{Timeout: 15 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s (Host %s): %v", method, a.base+path, a.host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// add posts a note and fails the test unless the app stored it.
func (a notesApp) add(text string) {
	a.t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	if code, b := a.do("POST", "/api/notes", body); code != http.StatusCreated {
		a.t.Fatalf("add note %q: %d %s", text, code, b)
	}
}

// notes lists the notes' texts, oldest first.
func (a notesApp) notes() []string {
	a.t.Helper()
	code, b := a.do("GET", "/api/notes", nil)
	if code != http.StatusOK {
		a.t.Fatalf("list notes: %d %s", code, b)
	}
	var ns []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &ns); err != nil {
		a.t.Fatalf("list notes: %v in %s", err, b)
	}
	out := []string{}
	for _, n := range ns {
		out = append(out, n.Text)
	}
	return out
}

func (a notesApp) wantNotes(when string, want ...string) {
	a.t.Helper()
	if got := a.notes(); !slices.Equal(got, want) {
		a.t.Fatalf("notes %s: %q, want %q", when, got, want)
	}
}

// startRouter runs the router of docker mode for a test: Traefik (make tools builds it) in a
// container of its FROM scratch image, named after the test's token (its cleanup removes it,
// before the project networks it was connected to), :80 on a loopback port the engine picks.
func startRouter(t *testing.T, dcli *client.Client, tok string) (name string, port int) {
	t.Helper()
	bin, err := dockertest.TraefikBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	img, err := dockertest.RouterImage(ctx, dcli, bin)
	if err != nil {
		t.Fatalf("router image: %v", err)
	}
	name = "router-" + tok
	t.Cleanup(func() {
		_, _ = dcli.ContainerRemove(context.Background(), name, client.ContainerRemoveOptions{Force: true})
	})
	port, err = dockertest.StartRouter(ctx, dcli, dockertest.RouterSpec{Name: name, Image: img, Labels: map[string]string{dockertest.Label: tok}})
	if err != nil {
		t.Fatalf("start the router: %v", err)
	}
	return name, port
}

// TestDockerNotesEndToEnd is issue 34's docker path, through the router as a user would go:
// the example project created from its directory starts (the command returns once web, api
// and db answer), notes added through http://<slug>-web.localhost (Traefik, which sailtui
// connected to the project network) survive a hibernation and wake, a manual snapshot taken
// while it runs holds exactly the notes of its moment when restored, and `project rm` leaves
// nothing.
func TestDockerNotesEndToEnd(t *testing.T) {
	t.Parallel()
	slug := "notes-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	_, tok := dockerPrefix(t, c)
	router, port := startRouter(t, dcli, tok)
	app := dockertest.DebianImageT(t, dcli, dockertest.AppImage)
	pg := dockertest.DebianImageT(t, dcli, dockertest.PostgresImage)
	for i, kv := range c.env {
		if strings.HasPrefix(kv, "DEVSERVER_IMAGE=") {
			c.env[i] = "DEVSERVER_IMAGE=" + app
		}
	}
	c.env = append(c.env, "SAILTUI_TRAEFIK_CONTAINER="+router, "APP_DOMAIN=localhost")

	c.ok("project", "create", slug, "--from", exampleNotes(t, pg))
	c.ok("project", "start", slug)
	host := slug + "-web.localhost"
	if u := c.dockerContainers(slug)["web"].URL; u != "http://"+host+"/" {
		t.Fatalf("web's URL %q, want the router's http://%s/", u, host)
	}
	a := notesApp{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), host: host}
	// The router learns a started container from the engine's events: a moment after start.
	web := func() notesApp {
		t.Helper()
		var code int
		var b []byte
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if code, b = a.do("GET", "/", nil); code == http.StatusOK {
				break
			}
		}
		if code != http.StatusOK || !strings.Contains(string(b), "<h1>Notes</h1>") {
			t.Fatalf("web's page through the router (Host %s): %d %s", host, code, b)
		}
		return a
	}
	web()
	// Services are never routed: the router serves nothing for db's name.
	db := notesApp{t: t, base: a.base, host: slug + "-db.localhost"}
	if code, b := db.do("GET", "/", nil); code != http.StatusNotFound {
		t.Errorf("the router for %s: %d %s, want 404 (a service has no route)", db.host, code, b)
	}
	if code, b := a.do("GET", "/", nil); code != http.StatusOK || !strings.Contains(string(b), "<h1>Notes</h1>") {
		t.Fatalf("web's page: %d %s", code, b)
	}
	a.wantNotes("of a new project")
	a.add("first")
	a.add("second")
	a.wantNotes("after two adds", "first", "second")

	c.ok("project", "hibernate", slug)
	assertNoDockerLeftovers(t, dcli, slug)
	c.ok("project", "wake", slug)
	a = web()
	a.wantNotes("after hibernate and wake", "first", "second")

	// A manual snapshot of the running project (its containers paused for the walk, so the
	// database's files are what a power cut would leave and PostgreSQL recovers from its WAL).
	var manual struct {
		ID string `json:"id"`
	}
	c.json(&manual, "snapshot", "create", slug, "--label", "two-notes")
	a.add("third")
	a.wantNotes("after the snapshot", "first", "second", "third")
	c.ok("snapshot", "restore", slug, manual.ID, "--yes")
	a = web()
	a.wantNotes("after the restore", "first", "second")
	a.add("after-restore")
	a.wantNotes("after an add on the restored database", "first", "second", "after-restore")

	c.ok("project", "rm", slug, "--yes")
	assertNoDockerLeftovers(t, dcli, slug)
}
