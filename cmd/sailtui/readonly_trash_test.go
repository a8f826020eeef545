package main

import (
	"os"
	"path/filepath"
	"testing"
)

// --readonly deletes nothing: a runtime wired read-only, in either mode that keeps a trash,
// leaves what a run that ended first left in it, where a writable one would delete it on open.
func TestReadOnlyLeavesTheTrash(t *testing.T) {
	for _, tc := range []struct{ mode, bin string }{
		{"local", filepath.Join("projects", ".sailtui-trash")},
		{"docker", ".sailtui-trash"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := testDefaults()
			cfg.StateDir, cfg.Mode, cfg.ReadOnly = t.TempDir(), tc.mode, true
			left := filepath.Join(cfg.StateDir, tc.bin, "old.1", "file")
			if err := os.MkdirAll(filepath.Dir(left), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(left, []byte("kept"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, closeRuntime, err := openRuntime(cfg)
			if err != nil {
				t.Fatal(err)
			}
			closeRuntime() // waits for any background delete
			if _, err := os.Stat(left); err != nil {
				t.Fatalf("a --readonly %s runtime deleted what waits in the trash: %v", tc.mode, err)
			}
		})
	}
}
