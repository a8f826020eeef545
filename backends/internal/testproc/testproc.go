// Package testproc is the plumbing the test servers share (the Kubernetes control plane and
// node, versitygw, PostgreSQL): where the repository is, a free port, random names, and child
// processes that do not outlive the test binary.
package testproc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// RepoRoot walks up from the working directory (a test runs in its package's directory) to the
// directory holding the main module's go.mod. Tool modules' go.mod files are never above a
// test of the main module, so the first go.mod found is the right one.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// FreePort is a loopback port nobody listens on right now. The server binds it a moment
// later; the race with another process taking it in between is accepted for tests.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RandomHex is n random bytes in hex.
func RandomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
