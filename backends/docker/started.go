package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// A stop removes the Docker container, so "no container" is what a stopped container looks
// like; what tells it from one removed behind sailtui's back (docker rm -f) is a record of each
// container this runtime started and has not stopped since:
// <StateDir>/docker-started/<project id>/<container>.json, written once the container runs and
// removed before sailtui removes the container. A container that has a record and no Docker
// container is missing: it was meant to run, and nothing will bring it back but a start.
const startedDirName = "docker-started"

// startedRecord is what a record says, for the doctor's report.
type startedRecord struct {
	Slug       string    `json:"slug"`
	Container  string    `json:"container"`
	DockerName string    `json:"docker_name"`
	StartedAt  time.Time `json:"started_at"`
}

func (r *Runtime) startedDir(projectID string) string {
	return filepath.Join(r.cfg.StateDir, startedDirName, url.PathEscape(projectID))
}

func (r *Runtime) startedPath(p engine.Project, name string) string {
	return filepath.Join(r.startedDir(p.ID), name+".json")
}

// noteStarted records that container name of p runs as sailtui started it.
func (r *Runtime) noteStarted(p engine.Project, name string) error {
	b, err := json.Marshal(startedRecord{Slug: p.Slug, Container: name,
		DockerName: r.containerName(p, engine.Container{Name: name}), StartedAt: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("record that %s was started: %w", name, err)
	}
	if err := os.MkdirAll(r.startedDir(p.ID), 0o700); err != nil {
		return fmt.Errorf("record that %s was started: %w", name, err)
	}
	if err := hostfs.WriteFileAtomic(r.startedPath(p, name), b, 0o600); err != nil {
		return fmt.Errorf("record that %s was started: %w", name, err)
	}
	return nil
}

// forgetStarted drops the record of container name of p, before sailtui removes its Docker
// container: from then on its absence is a stop, not a loss.
func (r *Runtime) forgetStarted(p engine.Project, name string) error {
	if err := os.Remove(r.startedPath(p, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forget that %s was started: %w", name, err)
	}
	return nil
}

// wasStarted says whether container name of p has a record: sailtui started it and has not
// stopped it since.
func (r *Runtime) wasStarted(p engine.Project, name string) bool {
	_, err := os.Stat(r.startedPath(p, name))
	return err == nil
}

// missingDetail says what became of a missing container and what brings it back.
func missingDetail(p engine.Project, dockerName string) string {
	return fmt.Sprintf("its Docker container %s was removed outside sailtui (docker rm?); sailtui project start %s recreates it",
		dockerName, p.Slug)
}

var _ engine.ContainerInventory = (*Runtime)(nil)

// MissingContainers implements engine.ContainerInventory: the containers this runtime started
// and did not stop whose Docker container is gone, found with one listing of the engine's
// containers against the records.
func (r *Runtime) MissingContainers(ctx context.Context) ([]engine.MissingContainer, error) {
	recs, err := r.startedRecords()
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	// After the records: a container started meanwhile has its Docker container by the time
	// it has a record.
	res, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", LabelManaged+"=true")})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	have := map[string]bool{}
	for _, c := range res.Items {
		have[c.Labels[LabelProjectID]+"\x00"+c.Labels[LabelContainer]] = true
	}
	var out []engine.MissingContainer
	for _, m := range recs {
		if have[m.ProjectID+"\x00"+m.Container] {
			continue
		}
		p := engine.Project{ID: m.ProjectID, Slug: m.Slug}
		// Looked at again: a stop that ended after the listing removed the record too.
		if ins, err := r.inspect(ctx, m.Name); err != nil || ins != nil || !r.wasStarted(p, m.Container) {
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// startedRecords reads every record of the state directory.
func (r *Runtime) startedRecords() ([]engine.MissingContainer, error) {
	root := filepath.Join(r.cfg.StateDir, startedDirName)
	projects, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the started containers' records: %w", err)
	}
	var out []engine.MissingContainer
	for _, d := range projects {
		id, err := url.PathUnescape(d.Name())
		if !d.IsDir() || err != nil {
			continue
		}
		files, err := os.ReadDir(filepath.Join(root, d.Name()))
		if err != nil {
			return nil, fmt.Errorf("read the started containers' records: %w", err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".json") || strings.HasPrefix(f.Name(), ".") {
				continue // a temporary file of a write in progress
			}
			b, err := os.ReadFile(filepath.Join(root, d.Name(), f.Name()))
			if errors.Is(err, fs.ErrNotExist) {
				continue // forgotten meanwhile: stopped
			}
			if err != nil {
				return nil, fmt.Errorf("read the started containers' records: %w", err)
			}
			var rec startedRecord
			if err := json.Unmarshal(b, &rec); err != nil || rec.Container+".json" != f.Name() {
				continue // not a record this runtime wrote
			}
			out = append(out, engine.MissingContainer{ProjectID: id, Slug: rec.Slug, Container: rec.Container,
				Name: rec.DockerName, StartedAt: rec.StartedAt})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].ProjectID+"\x00"+out[i].Container < out[j].ProjectID+"\x00"+out[j].Container
	})
	return out, nil
}
