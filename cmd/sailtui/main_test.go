package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// The test binary doubles as the sailtui binary: with SAILTUI_TEST_MAIN=1 it runs main(), so the
// end-to-end tests drive the real command line (and its SIGKILL crash hook) without a second build.
func TestMain(m *testing.M) {
	if os.Getenv("SAILTUI_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	// The sweeps of the tests written before the idle warning (issue 35) hibernate an idle
	// project in one run, as they did then; every command inherits this, and the warning's
	// own tests turn it on in the command's environment.
	if err := os.Setenv("SAILTUI_IDLE_WARNING_MINUTES", "0"); err != nil {
		panic(err)
	}
	// One PostgreSQL server for the package's tests, started on first use.
	os.Exit(pgtest.Main(m))
}

// selfCommand is the default container command in tests: this binary's devserver.
func selfCommand() string {
	return `SAILTUI_TEST_MAIN=1 ` + shellQuote(os.Args[0]) + ` devserver --dir . --port "$PORT"`
}

// cli runs sailtui commands against one state directory and stops every process it left running
// when the test ends.
type cli struct {
	t     testing.TB
	state string
	env   []string
}

func newCLI(t testing.TB) *cli {
	t.Helper()
	c := &cli{t: t, state: t.TempDir()}
	t.Cleanup(func() { stopEverything(t, c.state) })
	return c
}

type result struct {
	stdout, stderr string
	code           int
}

func (c *cli) runIn(stdin io.Reader, env []string, args ...string) result {
	c.t.Helper()
	// Not the test's context: cleanups run commands too, after it has ended.
	return c.runCtx(context.Background(), "", stdin, env, args...)
}

// runCtx runs sailtui under ctx, with env added to the cli's. A command that ctx ends fails
// the test, saying late (what ctx's end means) and what it had written.
func (c *cli) runCtx(ctx context.Context, late string, stdin io.Reader, env []string, args ...string) result {
	c.t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"--state-dir", c.state}, args...)...)
	cmd.Env = append(append(os.Environ(), "SAILTUI_TEST_MAIN=1", "NO_COLOR=1"), append(c.env, env...)...)
	cmd.Stdin = stdin
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		c.t.Fatalf("sailtui %s %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), late, so.String(), se.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("run sailtui %v: %v", args, err)
	}
	return result{so.String(), se.String(), code}
}

// refusal is a command line the CLI must refuse: with environment env added, it exits with code
// and its error mentions every one of wants.
type refusal struct {
	name  string
	env   []string
	args  []string
	code  int
	wants []string
}

// check holds r, the run of the refused command line, to the refusal.
func (rf refusal) check(t *testing.T, r result) {
	t.Helper()
	if r.code != rf.code {
		t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", r.code, rf.code, r.stdout, r.stderr)
	}
	for _, w := range rf.wants {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("error %q does not mention %q", r.stderr, w)
		}
	}
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	return c.runIn(nil, nil, args...)
}

// ok runs a command that must succeed.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("sailtui %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// headless runs a headless command that must succeed and checks that everything on its stderr
// is a JSON log record (what a CronJob's log collector reads); it returns stdout.
func (c *cli) headless(args ...string) string {
	c.t.Helper()
	args = append([]string{"--headless"}, args...)
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("sailtui %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	jsonLog(c.t, r.stderr)
	return r.stdout
}

func (c *cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("sailtui %s: bad JSON %q: %v", strings.Join(args, " "), out, err)
	}
}

// stopEverything stops the containers of every project in a state dir: tests leave no process.
func stopEverything(t testing.TB, state string) {
	cfg := testDefaults()
	cfg.StateDir = state
	p, err := openEngine(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer p.close()
	ps, err := p.store.ListProjects(context.Background(), engine.ProjectFilter{})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	for _, pr := range ps {
		cs, _ := p.store.ListContainers(context.Background(), pr.ID)
		if err := p.runtime.StopProject(context.Background(), pr, cs); err != nil {
			t.Logf("cleanup: stop %s: %v", pr.Slug, err)
		}
	}
}

// treeDigest, diffDigests and newProject are the engine tests' own (enginetest): a tree compares,
// and a test project is made, the same way here as there, with one copy of each.
var (
	treeDigest  = enginetest.TreeDigest
	diffDigests = enginetest.DiffDigests
	newProject  = enginetest.NewProject
)

// openTest opens an engine in-process on the state directory as the command line wires it (the
// embedded default unless the environment says otherwise, as the S3 tests set it), owned by
// owner; tweaks swap or wrap parts of the engine config.
func openTest(t *testing.T, state, owner string, tweaks ...func(*engine.Config)) *parts {
	t.Helper()
	return openConfig(t, testConfig(state), owner, tweaks...)
}

// testConfig is the command line's configuration of a test engine on the state directory,
// its containers running this test binary.
func testConfig(state string) config {
	cfg := testDefaults()
	cfg.StateDir = state
	cfg.DefaultCommand = selfCommand()
	return cfg
}

// openConfig opens an engine in-process wired from cfg as the command line wires it, owned by
// owner and without the crash hook, and closes it when t ends.
func openConfig(t *testing.T, cfg config, owner string, tweaks ...func(*engine.Config)) *parts {
	t.Helper()
	tweaks = append([]func(*engine.Config){func(c *engine.Config) { c.Owner = owner; c.StepHook = nil }}, tweaks...)
	p, err := openEngine(context.Background(), cfg, slog.New(slog.DiscardHandler), tweaks...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

// waitHTTP polls url until it answers 200 with a body containing want.
func waitHTTP(t testing.TB, url, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(b), want) {
				return
			}
			last = fmt.Sprintf("status %d body %q", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s never served %q: %s", url, want, last)
}

// writeFiles writes each file of files (name → content, directories made) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeSource lays out a project source: a root container and a web container.
func writeSource(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	files := map[string]string{
		"TESSLATE.md":       "# App\n\n## Development Server\n\n```bash\n# serve the root\n" + selfCommand() + "\n```\n",
		"index.html":        "<h1>root app</h1>\n",
		"web/TESSLATE.md":   "# Web\n\n## Framework Configuration\n\n**Frontend**: Vite + React\n",
		"web/index.html":    "<h1>web container</h1>\n",
		"web/src/main.js":   "console.log('hi')\n",
		"scripts/build.sh":  "#!/bin/sh\necho build\n",
		"data/\xff\xfe.bin": "non-utf8 name\n",
	}
	writeFiles(t, src, files)
	must(t, os.Chmod(filepath.Join(src, "scripts/build.sh"), 0o755))
	must(t, os.Symlink("web/index.html", filepath.Join(src, "link-to-web")))
	must(t, os.Symlink("does-not-exist", filepath.Join(src, "dangling")))
	// A virtualenv's interpreter link points out of the project; it must not block hibernation.
	must(t, os.MkdirAll(filepath.Join(src, ".venv/bin"), 0o755))
	must(t, os.Symlink("/usr/bin/python3", filepath.Join(src, ".venv/bin/python")))
	must(t, os.MkdirAll(filepath.Join(src, "empty/dir"), 0o750))
	return src
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testDefaults is the default configuration for the tests' in-process engines: as TestMain
// does for the commands they run, the idle warning is off, so that the sweeps of the tests
// written before it (issue 35) hibernate an idle project in one run; the warning's own tests
// set it.
func testDefaults() config {
	cfg := defaultConfig()
	cfg.IdleWarning = 0
	return cfg
}
