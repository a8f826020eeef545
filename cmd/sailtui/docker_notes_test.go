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
	"sync"
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
func exampleNotes(t testing.TB, pg string) string {
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
	t    testing.TB
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
func startRouter(t testing.TB, dcli *client.Client, tok string) (name string, port int) {
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

// notesProject is a docker-mode cli with a router of its own (SAILTUI_TRAEFIK_CONTAINER),
// DEVSERVER_IMAGE the Debian app image, and the example project created (not started) as slug;
// the app is reached only through the router.
func notesProject(tb testing.TB) (c *cli, dcli *client.Client, slug string, a notesApp) {
	tb.Helper()
	slug = "notes-" + randSuffix(tb)
	c, dcli = dockerCLI(tb, slug)
	_, tok := dockerPrefix(tb, c)
	router, port := startRouter(tb, dcli, tok)
	app := dockertest.DebianImageT(tb, dcli, dockertest.AppImage)
	pg := dockertest.DebianImageT(tb, dcli, dockertest.PostgresImage)
	for i, kv := range c.env {
		if strings.HasPrefix(kv, "DEVSERVER_IMAGE=") {
			c.env[i] = "DEVSERVER_IMAGE=" + app
		}
	}
	c.env = append(c.env, "SAILTUI_TRAEFIK_CONTAINER="+router, "APP_DOMAIN=localhost")
	c.ok("project", "create", slug, "--from", exampleNotes(tb, pg))
	return c, dcli, slug, notesApp{t: tb, base: fmt.Sprintf("http://127.0.0.1:%d", port), host: slug + "-web.localhost"}
}

// dbImage is the image of the example's db as containers ls lists it.
func (c *cli) dbImage(slug string) string {
	c.t.Helper()
	var cs []jsonServiceContainer
	c.json(&cs, "containers", "ls", slug)
	for _, x := range cs {
		if x.Name == "db" {
			return x.Image
		}
	}
	c.t.Fatalf("containers ls %s has no db: %+v", slug, cs)
	return ""
}

// waitPath waits (30 s) for a 200 answer to GET path through the router, which learns of a
// started container from the engine's events, a moment after the start, and returns its body.
func (a notesApp) waitPath(path string) string {
	a.t.Helper()
	cl := http.Client{Timeout: 5 * time.Second}
	last := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest("GET", a.base+path, nil)
		req.Host = a.host
		resp, err := cl.Do(req)
		if err != nil {
			last = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return string(b)
		}
		last = fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	a.t.Fatalf("GET %s through the router (Host %s) never answered 200: %s", path, a.host, last)
	return ""
}

// TestDockerNotesEndToEnd is issue 34's docker path, through the router as a user would go:
// the example project created from its directory starts (the command returns once web, api
// and db answer), notes added through http://<slug>-web.localhost (Traefik, which sailtui
// connected to the project network) survive a hibernation and wake, a manual snapshot taken
// while notes are being committed holds, restored, every note acknowledged before it began and
// none acknowledged after it ended (PostgreSQL opens the copy on its own), the restore is undone
// from its safety snapshot, and `project rm` leaves nothing.
func TestDockerNotesEndToEnd(t *testing.T) {
	t.Parallel()
	c, dcli, slug, a := notesProject(t)
	c.ok("project", "start", slug)
	if u := c.dockerContainers(slug)["web"].URL; u != "http://"+a.host+"/" {
		t.Fatalf("web's URL %q, want the router's http://%s/", u, a.host)
	}
	web := func() notesApp {
		t.Helper()
		if page := a.waitPath("/"); !strings.Contains(page, "<h1>Notes</h1>") {
			t.Fatalf("web's page through the router (Host %s): %s", a.host, page)
		}
		return a
	}
	web()
	// What a person reads first (issue 34, item 6): web's URL is the router's, db's image and
	// volume, what each connection gives.
	prefix, _ := dockerPrefix(t, c)
	desc := c.ok("project", "describe", slug)
	for _, want := range []string{
		"web (primary): app in web, running, http://" + a.host + "/\n",
		"db: service " + c.dbImage(slug) + ", data at /var/lib/postgresql/data (volume " + prefix + "-" + slug + "-db), running\n",
		"web → api (API_URL)\n",
		"api → db (DATABASE_URL)\n",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("project describe lacks %q:\n%s", want, desc)
		}
	}
	// Services are never routed: the router serves nothing for db's name.
	db := notesApp{t: t, base: a.base, host: slug + "-db.localhost"}
	if code, b := db.do("GET", "/", nil); code != http.StatusNotFound {
		t.Errorf("the router for %s: %d %s, want 404 (a service has no route)", db.host, code, b)
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

	// A manual snapshot of the running project while notes are being committed (its
	// containers are paused for the walk, so the database's files are what a power cut would
	// leave, and PostgreSQL recovers them from its WAL when the snapshot is restored).
	w := startWriter(a)
	time.Sleep(time.Second) // some notes committed before the snapshot begins
	begun := w.acked()
	var manual struct {
		ID string `json:"id"`
	}
	c.json(&manual, "snapshot", "create", slug, "--label", "under-writes")
	ended := w.acked()
	// At least one note acknowledged after the snapshot ended, so "none after it" is tested:
	// under load the writer may not have got one in before the command returned.
	for deadline := time.Now().Add(30 * time.Second); w.acked() <= ended && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	written, err := w.stop()
	if err != nil {
		t.Fatalf("the note writer: %v", err)
	}
	if begun == 0 || len(written) <= ended {
		t.Fatalf("the writer committed %d notes before the snapshot and %d in all (%d at its end): too few to tell anything", begun, len(written), ended)
	}
	all := append([]string{"first", "second"}, written...)
	a.wantNotes("after the writes", all...)
	a.add("after-snapshot")

	c.ok("snapshot", "restore", slug, manual.ID, "--yes")
	a = web()
	// Every note acknowledged before the snapshot began is there, none acknowledged after it
	// ended, and what is there is a prefix of what was written (one writer, one at a time).
	got := a.notes()
	n := len(got) - 2
	if n < begun || n > ended+1 || !slices.Equal(got, all[:len(got)]) {
		t.Fatalf("notes after restoring the snapshot taken under writes: %q\nwant the first %d..%d of %q", got, begun+2, ended+3, all)
	}
	t.Logf("notes of the writer: %d acknowledged before the snapshot began, %d by its end, %d in the restored database", begun, ended, n)
	a.add("after-restore")
	a.wantNotes("after an add on the restored database", append(slices.Clone(got), "after-restore")...)

	// Undo the restore from its safety snapshot: the notes of that moment come back.
	var safety string
	for _, sn := range c.snapshots(slug) {
		if sn.Type == "safety" && sn.Status == "ready" {
			safety = sn.ID
		}
	}
	if safety == "" {
		t.Fatalf("no ready safety snapshot after the restore: %+v", c.snapshots(slug))
	}
	c.ok("snapshot", "restore", slug, safety, "--yes")
	a = web()
	a.wantNotes("after undoing the restore", append(slices.Clone(all), "after-snapshot")...)

	c.ok("project", "rm", slug, "--yes")
	assertNoDockerLeftovers(t, dcli, slug)
}

// writer adds notes w-1, w-2, ... one at a time until stopped, recording each the app
// acknowledged (201), so the notes stored are a prefix of the ones it wrote; a failed request
// ends it with an error.
type writer struct {
	mu   sync.Mutex
	done []string
	quit chan struct{}
	end  chan error
}

func startWriter(a notesApp) *writer {
	w := &writer{quit: make(chan struct{}), end: make(chan error, 1)}
	go func() {
		cl := http.Client{Timeout: 30 * time.Second}
		for i := 1; ; {
			select {
			case <-w.quit:
				w.end <- nil
				return
			default:
			}
			text := fmt.Sprintf("w-%d", i)
			body, _ := json.Marshal(map[string]string{"text": text})
			req, _ := http.NewRequest("POST", a.base+"/api/notes", bytes.NewReader(body))
			req.Host = a.host
			req.Header.Set("Content-Type", "application/json")
			resp, err := cl.Do(req)
			if err != nil {
				// Not retried: the note may be stored without its answer, and a retry would
				// store it twice.
				w.end <- fmt.Errorf("add %s: %w", text, err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound {
				// The router's answer while the snapshot's pause has the containers frozen:
				// Traefik drops the route of a paused container, so the request reached no app
				// and stored nothing. The same note again, once the route is back.
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if resp.StatusCode != http.StatusCreated {
				w.end <- fmt.Errorf("add %s: status %d", text, resp.StatusCode)
				return
			}
			w.mu.Lock()
			w.done = append(w.done, text)
			w.mu.Unlock()
			i++
		}
	}()
	return w
}

// acked is how many notes the app has acknowledged so far.
func (w *writer) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.done)
}

// stop ends the writer and returns the notes acknowledged, in order, and why it ended early.
func (w *writer) stop() ([]string, error) {
	close(w.quit)
	err := <-w.end
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.done), err
}

// BenchmarkDockerNotes (make bench; issue 34): the time from `project start` (after a stop) and
// from `project wake` (after a hibernation) to the example's first 200 of /api/notes through
// the router, which needs web, api and the database: the median of b.N rounds (-benchtime 5x).
func BenchmarkDockerNotes(b *testing.B) {
	c, _, slug, a := notesProject(b)
	c.ok("project", "start", slug)
	a.waitPath("/api/notes")
	a.add("kept")
	var starts, wakes []time.Duration
	for i := 0; i < b.N; i++ {
		c.ok("project", "stop", slug)
		t0 := time.Now()
		c.ok("project", "start", slug)
		a.waitPath("/api/notes")
		starts = append(starts, time.Since(t0))

		c.ok("project", "hibernate", slug)
		t0 = time.Now()
		c.ok("project", "wake", slug)
		a.waitPath("/api/notes")
		wakes = append(wakes, time.Since(t0))
	}
	a.wantNotes("after the rounds", "kept")
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(median(starts).Seconds(), "s-start-to-200")
	b.ReportMetric(median(wakes).Seconds(), "s-wake-to-200")
	b.Logf("start to 200: %v (median %v); wake to 200: %v (median %v)", starts, median(starts), wakes, median(wakes))
	c.ok("project", "rm", slug, "--yes")
}

// TestDockerNotesDatabaseDown: when the example's database cannot start (no POSTGRES_PASSWORD
// for its first start, which the image refuses as upstream's does), `project start` fails
// naming db and why (its last log lines), and api and web, which depend on it through their
// connections, are not started, each saying so.
func TestDockerNotesDatabaseDown(t *testing.T) {
	t.Parallel()
	slug := "nodb-" + randSuffix(t)
	c, dcli := dockerCLI(t, slug)
	app := dockertest.DebianImageT(t, dcli, dockertest.AppImage)
	pg := dockertest.DebianImageT(t, dcli, dockertest.PostgresImage)
	for i, kv := range c.env {
		if strings.HasPrefix(kv, "DEVSERVER_IMAGE=") {
			c.env[i] = "DEVSERVER_IMAGE=" + app
		}
	}
	src := exampleNotes(t, pg)
	cfg := filepath.Join(src, ".tesslate", "config.json")
	b, err := os.ReadFile(cfg)
	must(t, err)
	if !bytes.Contains(b, []byte(`"POSTGRES_PASSWORD": "notes-dev", `)) {
		t.Fatalf("%s no longer sets POSTGRES_PASSWORD as this test expects:\n%s", cfg, b)
	}
	must(t, os.WriteFile(cfg, bytes.Replace(b, []byte(`"POSTGRES_PASSWORD": "notes-dev", `), nil, 1), 0o644))
	c.ok("project", "create", slug, "--from", src)

	r := c.run("project", "start", slug)
	if r.code != 1 {
		t.Fatalf("start with a database that cannot start: %+v, want exit 1", r)
	}
	for _, want := range []string{
		"start " + slug + "/db: it exited at once with code 1",
		"POSTGRES_PASSWORD is not set",
		"start " + slug + "/api: not started: it depends on db",
		"start " + slug + "/web: not started: it depends on api",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("project start's error does not say %q:\n%s", want, r.stderr)
		}
	}
	for name, x := range c.dockerContainers(slug) {
		if name != "db" && x.Status == "running" {
			t.Errorf("%s runs although the database it depends on is down: %+v", name, x)
		}
	}
	c.ok("project", "rm", slug, "--yes")
	assertNoDockerLeftovers(t, dcli, slug)
}
