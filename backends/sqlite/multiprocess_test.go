package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/storetest"
)

func openClosed(t *testing.T, path string) engine.Store {
	s := openAt(t, path)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestMultiProcessClaims races real processes: POSIX file locks are per process, so this covers
// what two handles inside one process cannot.
func TestMultiProcessClaims(t *testing.T) {
	storetest.RunMultiProcessClaims(t, filepath.Join(t.TempDir(), "procs.db"), "TestClaimHelperProcess", openClosed)
}

// TestClaimHelperProcess is the child of TestMultiProcessClaims; it does nothing on its own.
func TestClaimHelperProcess(t *testing.T) {
	if !storetest.MultiProcessClaimChild(t, openClosed) {
		t.Skip("helper process for TestMultiProcessClaims")
	}
}
