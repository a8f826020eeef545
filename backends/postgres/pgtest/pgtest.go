package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
)

// shared is the package-wide server of a test binary whose TestMain uses Main.
var shared struct {
	sync.Mutex
	enabled bool
	srv     *Server
	err     error // a failed start is not retried: every test reports it
}

// Main runs a package's tests with one server shared by all of them, started by the first
// Start and removed when the tests are done. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Helper processes that re-exec the test binary never call Start, so they start no server.
func Main(m *testing.M) int {
	shared.Lock()
	shared.enabled = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.srv != nil {
		if err := shared.srv.Remove(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Start returns the DSN of a new, empty database and drops it when t ends. Under Main the
// database is on the package's shared server; otherwise t gets a server of its own, removed
// when t ends. A server that cannot start fails t with the reason.
func Start(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	srv := sharedServer(t)
	if srv == nil {
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

// sharedServer is the Main server, started on first use; nil without Main.
func sharedServer(t testing.TB) *Server {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.enabled {
		return nil
	}
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = NewServer(context.Background())
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.srv
}
