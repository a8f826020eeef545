package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sailtui/sailtui/engine"
)

// demoFS holds the demo workspace's project sources.
//
//go:embed demo
var demoFS embed.FS

// seedDemo fills an empty state with a few projects in different states: storefront (two
// containers, running), blog (active, its container not started) and notes-api (hibernated).
func seedDemo(ctx context.Context, eng *engine.Engine) error {
	ps, err := eng.ListProjects(ctx, engine.ProjectFilter{IncludeDeleted: true})
	if err != nil {
		return fmt.Errorf("demo: list projects: %w", err)
	}
	if len(ps) > 0 {
		return nil
	}
	tmp, err := os.MkdirTemp("", "sailtui-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(tmp)
	sub, _ := fs.Sub(demoFS, "demo")
	if err := os.CopyFS(tmp, sub); err != nil {
		return fmt.Errorf("demo: unpack sources: %w", err)
	}
	for _, name := range []string{"storefront", "blog", "notes-api"} {
		if _, err := eng.CreateProject(ctx, engine.CreateRequest{Name: name, Owner: "demo", FromDir: filepath.Join(tmp, name)}); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	if err := eng.Connect(ctx, "storefront", "frontend", "backend"); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if _, err := eng.StartProject(ctx, "storefront"); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if _, err := eng.Hibernate(ctx, "notes-api"); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}
