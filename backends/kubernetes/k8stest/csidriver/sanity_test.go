package csidriver

import (
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
)

// TestSanity runs csi-test's sanity suite (csi-sanity) against the driver: every call of the
// capabilities it advertises, their errors and their idempotency, with real bind mounts.
func TestSanity(t *testing.T) {
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
