package docker

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Describe tells what the engine holds of the project: its directory, network and compose
// file, and for each container in cs or on the engine its state, ports, URLs and image.
func (r *Runtime) Describe(ctx context.Context, p engine.Project, cs []engine.Container) (string, error) {
	dir, err := r.projectDir(p)
	if err != nil {
		return "", fmt.Errorf("describe: %w", err)
	}
	exists, err := r.ProjectExists(ctx, p)
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	names, err := r.containerNames(ctx, p, cs)
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	nets, err := r.networksNamed(ctx, r.networkName(p))
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "docker runtime: project %s (image %s, user %s)\n", p.Slug, r.cfg.Image, r.cfg.User)
	missing := ""
	if !exists {
		missing = " (missing)"
	}
	fmt.Fprintf(&b, "directory: %s%s, mounted at %s\n", dir, missing, r.cfg.MountPath)
	if len(nets) == 0 {
		fmt.Fprintf(&b, "network: %s (missing)\n", r.networkName(p))
	} else {
		fmt.Fprintf(&b, "network: %s (%.12s)\n", r.networkName(p), nets[0])
	}
	fmt.Fprintf(&b, "compose file: %s\n", r.ComposeFile(p))
	if len(names) == 0 {
		b.WriteString("no containers\n")
		return b.String(), nil
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tDOCKER NAME\tSTATE\tLOCAL\tUPTIME\tURL")
	now := time.Now()
	for _, n := range names {
		c := engine.Container{ProjectID: p.ID, Name: n}
		st, err := r.ContainerStatus(ctx, p, c)
		if err != nil {
			fmt.Fprintf(tw, "%s\t%s\tunknown\t-\t-\t%v\n", n, r.containerName(p, c), err)
			continue
		}
		state, local, uptime, url := st.State, "-", "-", "-"
		switch st.State {
		case engine.ContainerRunning:
			local = st.LocalURL
			url = st.URL
			if !st.StartedAt.IsZero() {
				uptime = now.Sub(st.StartedAt).Round(time.Second).String()
			}
		case engine.ContainerExited:
			state = fmt.Sprintf("exited(%d)", st.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n, r.containerName(p, c), state, local, uptime, url)
	}
	if err := tw.Flush(); err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	return b.String(), nil
}
