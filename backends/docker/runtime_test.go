package docker

import (
	"path/filepath"
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
