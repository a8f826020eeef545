package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/engine"
)

// Environments implements engine.Inventory: the project networks of this runtime's prefix
// and, with host directories, the project directories under ProjectsDir. Containers are not
// listed: on a daemon shared by several sailtuis their labels do not say whose they are, and a
// project's containers live on its network, which is.
func (r *Runtime) Environments(ctx context.Context) ([]engine.Environment, error) {
	var out []engine.Environment
	prefix := r.cfg.NetworkPrefix + "-"
	res, err := r.cli.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("label", LabelManaged)})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range res.Items {
		slug, ok := strings.CutPrefix(n.Name, prefix)
		if !ok || slug == "" {
			continue
		}
		// Only the containers labelled as the network's project: a container of anyone else
		// attached to it is not ours to remove (the network rm then says it is in use).
		owned := "--filter label=" + LabelProjectID + "=" + n.Labels[LabelProjectID]
		out = append(out, engine.Environment{Slug: slug, Kind: "docker network", Name: n.Name,
			Remove: "docker rm -f $(docker ps -aq --filter network=" + n.Name + " " + owned + "); docker network rm " + n.Name})
	}
	if r.cfg.Volumes {
		return out, nil
	}
	owners, err := os.ReadDir(r.cfg.ProjectsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list project directories: %w", err)
	}
	for _, o := range owners {
		if !o.IsDir() {
			continue
		}
		dirs, err := os.ReadDir(filepath.Join(r.cfg.ProjectsDir, o.Name()))
		if err != nil {
			return nil, fmt.Errorf("list project directories: %w", err)
		}
		owner, _ := url.PathUnescape(o.Name())
		for _, d := range dirs {
			if !d.IsDir() || strings.HasPrefix(d.Name(), ".") {
				continue
			}
			dir := filepath.Join(r.cfg.ProjectsDir, o.Name(), d.Name())
			out = append(out, engine.Environment{Slug: d.Name(), Kind: "directory of owner " + owner, Name: dir,
				Remove: "rm -rf '" + strings.ReplaceAll(dir, "'", `'\''`) + "'"})
		}
	}
	return out, nil
}
