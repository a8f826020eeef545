package docker

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/runtimetest"
)

// serveCommand is the contract's static file server: the image's sailtui devserver.
const serveCommand = `exec sailtui devserver --dir . --port "$PORT"`

// testConfig is a runtime configuration on fresh directories whose containers and networks
// carry a label of the test's own, so its cleanup removes them whatever happened.
func testConfig(t *testing.T, cli *client.Client) Config {
	t.Helper()
	tok := dockertest.Token(t, cli)
	base := t.TempDir()
	return Config{
		Client:        cli,
		ProjectsDir:   filepath.Join(base, "users"),
		StateDir:      filepath.Join(base, "state"),
		Image:         dockertest.Image(t, cli),
		NetworkPrefix: "sailtui-" + tok,
		Labels:        map[string]string{dockertest.Label: tok},
		StopTimeout:   2 * time.Second,
		DirectURLs:    true,
	}
}

func newTestRuntime(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// The package's tests run in parallel where they can (not where they set the environment): each
// has its own label token, networks, volumes and directories, and they mostly wait on the
// Docker daemon, so running them one at a time only adds up their waits.
func TestContract(t *testing.T) {
	t.Parallel()
	runContract(t, false)
}

// TestContractVolumes is the same contract with every project's files in a named volume.
func TestContractVolumes(t *testing.T) {
	t.Parallel()
	runContract(t, true)
}

func runContract(t *testing.T, volumes bool) {
	cli := dockertest.Client(t)
	runtimetest.Run(t, runtimetest.Harness{
		New: func(t *testing.T) engine.Runtime {
			cfg := testConfig(t, cli)
			cfg.Volumes = volumes
			// The contract writes a file beside the project from inside a container; / is
			// root's in any image, so the project is mounted where the user may write beside it.
			cfg.MountPath = "/home/dev/app"
			return newTestRuntime(t, cfg)
		},
		ServeCommand: serveCommand,
	})
}

// Issue 31: a project started under one SAILTUI_DOCKER_NETWORK_PREFIX and then under another
// would get a second network with every container on both. The second is refused, naming the
// prefix the project runs under.
func TestOtherNetworkPrefixRefused(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	cfg := testConfig(t, cli)
	first := newTestRuntime(t, cfg)
	p := engine.Project{ID: "prefix-" + dockertest.Token(t, cli), Slug: "shop"}
	if err := first.EnsureProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.DestroyProject(context.Background(), p, nil) })
	other := cfg
	other.NetworkPrefix = cfg.NetworkPrefix + "-other"
	second := newTestRuntime(t, other)
	err := second.EnsureProject(t.Context(), p)
	if !errors.Is(err, engine.ErrBadState) || !strings.Contains(err.Error(), "SAILTUI_DOCKER_NETWORK_PREFIX="+cfg.NetworkPrefix) {
		t.Fatalf("EnsureProject under another prefix: %v; want a refusal naming the prefix %s", err, cfg.NetworkPrefix)
	}
	res, lerr := cli.NetworkList(t.Context(), client.NetworkListOptions{Filters: client.Filters{}.Add("label", LabelProjectID+"="+p.ID)})
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(res.Items) != 1 {
		t.Errorf("the project has %d networks after the refusal, want 1", len(res.Items))
	}
}
