package local

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// A project's log directory (or a kept log in it) swapped for a symbolic link is not read or
// written through: Logs, with and without follow, and MarkLog refuse with what to do, and
// what the link points at is neither shown nor changed.
func TestLinkedLogDirIsRefused(t *testing.T) {
	cfg := testConfig(t)
	r := newTestRuntime(t, cfg)
	p := engine.Project{ID: "p1", Slug: "demo"}
	outside := t.TempDir()
	secret := filepath.Join(outside, "app.log")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, r.logDir(p.Slug)); err != nil {
		t.Fatal(err)
	}
	c := engine.Container{Name: "app"}
	for _, follow := range []bool{false, true} {
		rc, err := r.Logs(t.Context(), p, c, engine.LogOptions{Follow: follow})
		var got []byte
		if err == nil {
			got, err = io.ReadAll(rc)
			_ = rc.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "rm "+r.logDir(p.Slug)) || strings.Contains(string(got), "secret") {
			t.Fatalf("Logs (follow %v) through a linked log dir: %q %v (want a refusal saying to remove the link)", follow, got, err)
		}
	}
	if err := r.MarkLog(t.Context(), p, []engine.Container{c}, "stopped"); err == nil || !errors.Is(err, engine.ErrBadPath) {
		t.Fatalf("MarkLog through a linked log dir: %v (want a refusal)", err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret\n" {
		t.Fatalf("the file behind the link changed: %q %v", b, err)
	}
}

// A followed log replaced by a link meanwhile (as a rotation replaces it by a new file) ends
// the follow with the refusal, and what the link points at is never shown.
func TestFollowedLogSwappedForLink(t *testing.T) {
	r := newTestRuntime(t, testConfig(t))
	p := engine.Project{ID: "p1", Slug: "demo"}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.logDir(p.Slug), 0o700); err != nil {
		t.Fatal(err)
	}
	path := r.logPath(p.Slug, "app")
	if err := os.WriteFile(path, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Bounded: a follow that went on through the link would never end by itself.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	rc, err := r.Logs(ctx, p, engine.Container{Name: "app"}, engine.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err == nil || !strings.Contains(err.Error(), "rm "+path) || strings.Contains(string(got), "secret") {
		t.Fatalf("follow of a log swapped for a link: %q %v (want a refusal saying to remove it)", got, err)
	}
}
