package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithDependencyInstallSkipsCommandsThatInstall(t *testing.T) {
	for _, cmd := range []string{
		"pnpm install --frozen-lockfile && bun run dev",
		"npm ci; npm run dev",
		"cd web && bun i && bun dev",
		"yarn install\nyarn dev",
	} {
		if got := WithDependencyInstall(cmd); got != cmd {
			t.Errorf("%q got an install step although it installs itself", cmd)
		}
	}
	for _, cmd := range []string{"npm run dev", "vite --host", "echo npm-install-docs; npm start", "make install-nothing"} {
		if got := WithDependencyInstall(cmd); !strings.HasSuffix(got, cmd) || got == cmd {
			t.Errorf("%q got no install step", cmd)
		}
	}
}

// The step runs the package manager the lock file names, only when package.json is there
// without node_modules, says what it ran, and fails the start when the install fails. Fake
// package managers on PATH record what was run.
func TestDependencyInstallStep(t *testing.T) {
	bin := t.TempDir()
	for _, pm := range []string{"npm", "pnpm", "yarn", "bun"} {
		script := "#!/bin/sh\necho \"" + pm + " $*\" >> \"$RAN\"\n[ \"$FAIL\" = " + pm + " ] && exit 7\nexit 0\n"
		if err := os.WriteFile(filepath.Join(bin, pm), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		files []string
		fail  string
		ran   string
		code  int
	}{
		{"no package.json", nil, "", "", 0},
		{"npm by default", []string{"package.json"}, "", "npm install", 0},
		{"pnpm by its lock", []string{"package.json", "pnpm-lock.yaml"}, "", "pnpm install", 0},
		{"yarn by its lock", []string{"package.json", "yarn.lock"}, "", "yarn install", 0},
		{"bun by its lock", []string{"package.json", "bun.lockb"}, "", "bun install", 0},
		{"installed already", []string{"package.json", "node_modules/"}, "", "", 0},
		{"failed install fails the start", []string{"package.json"}, "npm", "npm install", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				p := filepath.Join(dir, f)
				if strings.HasSuffix(f, "/") {
					_ = os.MkdirAll(p, 0o755)
					continue
				}
				_ = os.WriteFile(p, []byte("{}"), 0o644)
			}
			ran := filepath.Join(t.TempDir(), "ran")
			cmd := exec.Command("sh", "-c", WithDependencyInstall("echo started"))
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "RAN=" + ran, "FAIL=" + tt.fail}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			got, _ := os.ReadFile(ran)
			if strings.TrimSpace(string(got)) != tt.ran || code != tt.code {
				t.Fatalf("ran %q exit %d, want %q exit %d; output:\n%s", got, code, tt.ran, tt.code, out)
			}
			if tt.ran != "" && !strings.Contains(string(out), "sailtui: package.json without node_modules: running "+tt.ran) {
				t.Errorf("the log does not say what ran:\n%s", out)
			}
			if started := strings.Contains(string(out), "started"); started != (tt.code == 0) {
				t.Errorf("command started=%v after exit %d", started, tt.code)
			}
		})
	}
}
