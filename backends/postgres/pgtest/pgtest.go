package pgtest

import (
	"context"
	"testing"

	"github.com/sailtui/sailtui/backends/internal/testproc"
)

// shared is the package-wide server of a test binary whose TestMain uses Main.
var shared testproc.Shared[*Server]

// Main runs a package's tests with one server shared by all of them, started by the first
// Start and removed when the tests are done. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Helper processes that re-exec the test binary never call Start, so they start no server.
func Main(m *testing.M) int { return shared.Main(m, (*Server).Remove) }

// Start returns the DSN of a new, empty database and drops it when t ends. Under Main the
// database is on the package's shared server; otherwise t gets a server of its own, removed
// when t ends. A server that cannot start fails t with the reason.
func Start(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	srv, ok := shared.Get(t, func() (*Server, error) { return NewServer(context.Background()) })
	if !ok {
		var err error
		if srv, err = NewServer(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := srv.Remove(); err != nil {
				t.Error(err)
			}
		})
	}
	dsn, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatalf("%v (%s)", err, srv)
	}
	t.Cleanup(func() {
		// Cleanups run last-registered first: the caller's, registered after this one, have
		// closed their pools by now. FORCE ends any connection that leaked.
		if err := srv.DropDatabase(context.Background(), dsn); err != nil {
			t.Error(err)
		}
	})
	return dsn
}
