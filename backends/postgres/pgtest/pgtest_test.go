package pgtest

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Without Main, Start gives the test a server of its own; as root, the server is not root.
func TestStartWithoutMain(t *testing.T) {
	dsn := Start(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var pid int32
	var encoding string
	if err := conn.QueryRow(t.Context(), `SELECT pg_backend_pid(), current_setting('server_encoding')`).Scan(&pid, &encoding); err != nil {
		t.Fatal(err)
	}
	if encoding != "UTF8" {
		t.Errorf("server encoding %s, want UTF8", encoding)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/status")
	if err != nil {
		t.Fatalf("read the backend's process status: %v", err)
	}
	for line := range strings.Lines(string(status)) {
		if uids, ok := strings.CutPrefix(line, "Uid:"); ok {
			if os.Geteuid() == 0 && strings.Fields(uids)[0] != strconv.Itoa(nobody) {
				t.Errorf("backend runs as uid %s, want %d", strings.Fields(uids)[0], nobody)
			}
		}
	}
}
