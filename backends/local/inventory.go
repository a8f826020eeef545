package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sailtui/sailtui/engine"
)

// Environments implements engine.Inventory: every project directory under ProjectsDir, so the
// doctor can name those of no project. Names starting with a dot are the restore's and
// hibernation's own temporary trees.
func (r *Runtime) Environments(ctx context.Context) ([]engine.Environment, error) {
	entries, err := os.ReadDir(r.cfg.ProjectsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list project directories: %w", err)
	}
	var out []engine.Environment
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(r.cfg.ProjectsDir, e.Name())
		out = append(out, engine.Environment{Slug: e.Name(), Kind: "directory", Name: dir,
			Remove: "rm -rf " + shellQuote(dir)})
	}
	return out, nil
}

// shellQuote quotes s for a POSIX shell, for commands shown to an operator.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
