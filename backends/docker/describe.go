package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// Describe tells what the engine holds of the project: its directory or volume, network and
// compose file, and for each container in cs or on the engine its state, ports, URLs and image.
func (r *Runtime) Describe(ctx context.Context, p engine.Project, cs []engine.Container) (string, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return "", fmt.Errorf("describe: %w", err)
	}
	storage, err := r.describeStorage(ctx, p)
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	names, err := r.containerNames(ctx, p, cs)
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	nets, netErr := r.projectNetworks(ctx, p, r.networkName(p))
	if netErr != nil && !errors.Is(netErr, engine.ErrExists) {
		return "", fmt.Errorf("describe %s: %w", p.Slug, netErr)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "docker runtime: project %s (image %s, user %s)\n", p.Slug, r.cfg.Image, r.cfg.User)
	fmt.Fprintf(&b, "%s, mounted at %s\n", storage, r.cfg.MountPath)
	switch {
	case netErr != nil:
		fmt.Fprintf(&b, "network: %s (%v)\n", r.networkName(p), netErr)
	case len(nets) == 0:
		fmt.Fprintf(&b, "network: %s (missing)\n", r.networkName(p))
	default:
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
		state, local, uptime, url := string(st.State), "-", "-", "-"
		switch st.State {
		case engine.ContainerRunning:
			local, url = cmp.Or(st.LocalURL, "-"), cmp.Or(st.URL, "-")
			if st.LocalURL == "" && st.HostPort > 0 {
				// A service: where this machine reaches its port, not a URL.
				local = net.JoinHostPort(r.cfg.PublishHost, strconv.Itoa(st.HostPort))
			}
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

// describeStorage is one line on where the project's files are.
func (r *Runtime) describeStorage(ctx context.Context, p engine.Project) (string, error) {
	if !r.cfg.Volumes {
		dir := r.hostDir(p)
		exists, err := hostfs.ProjectDirExists(p.Slug, dir)
		if err != nil {
			return "", err
		}
		if !exists {
			return "directory: " + dir + " (missing)", nil
		}
		return "directory: " + dir, nil
	}
	v, err := r.inspectVolume(ctx, p)
	switch {
	case err != nil:
		return "", err
	case v == nil:
		return "volume: " + r.volumeName(p) + " (missing)", nil
	case r.ownsVolume(p, v) != nil:
		return "volume: " + v.Name + " (belongs to another project: " + v.Labels[LabelProjectID] + ")", nil
	}
	if _, err := usableDir(v); err != nil {
		return "volume: " + v.Name + " at " + v.Mountpoint + " (not usable from here)", nil
	}
	return "volume: " + v.Name + " at " + v.Mountpoint, nil
}
