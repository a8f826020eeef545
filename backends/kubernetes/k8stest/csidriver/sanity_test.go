package csidriver

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
)

// sanityChild marks the test binary run again for the suite alone.
const sanityChild = "SAILTUI_CSI_SANITY_CHILD"

// TestSanity runs csi-test's sanity suite (csi-sanity) against the driver: every call of the
// capabilities it advertises, their errors and their idempotency, with real bind mounts.
//
// The suite is Ginkgo's, which refuses to run under `go test -parallel N` (make test passes
// it for the long tests of other packages), so the test binary runs it again in a process of
// its own without that flag.
func TestSanity(t *testing.T) {
	if os.Getenv(sanityChild) == "" {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSanity$", "-test.count=1", "-test.timeout=10m")
		cmd.Env = append(os.Environ(), sanityChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the sanity suite failed (%v):\n%s", err, out)
		}
		if testing.Verbose() {
			t.Logf("%s", out)
		}
		return
	}
	s := serve(t, "")
	cfg := sanity.NewTestConfig()
	cfg.Address = "unix:" + s.sock
	cfg.TargetPath = filepath.Join(s.dir, "target")
	cfg.StagingPath = filepath.Join(s.dir, "staging")
	cfg.TestVolumeSize = 1 << 20
	sanity.Test(t, cfg)
	// The suite deletes what it made; a leftover would be a volume or snapshot the driver
	// lost track of.
	s.drv.mu.Lock()
	defer s.drv.mu.Unlock()
	if len(s.drv.volumes) != 0 || len(s.drv.snapshots) != 0 {
		t.Errorf("after the suite the driver still has %d volumes and %d snapshots", len(s.drv.volumes), len(s.drv.snapshots))
	}
}
