package postgres

import (
	"testing"

	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/storetest"
)

func openTarget(t *testing.T, dsn string) engine.Store { return openDSN(t, dsn) }

// TestMultiProcessClaims races real processes, each with its own pool, over the same projects
// in clashing orders.
func TestMultiProcessClaims(t *testing.T) {
	storetest.RunMultiProcessClaims(t, pgtest.Start(t), "TestClaimHelperProcess", openTarget)
}

// TestClaimHelperProcess is the child of TestMultiProcessClaims; it does nothing on its own.
func TestClaimHelperProcess(t *testing.T) {
	if !storetest.MultiProcessClaimChild(t, openTarget) {
		t.Skip("helper process for TestMultiProcessClaims")
	}
}
