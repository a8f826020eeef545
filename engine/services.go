package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sailtui/sailtui/engine/tesslate"
)

// ServiceRunner is offered by runtimes that run service containers: an image of the service's
// own with a data volume of its own (docker, kubernetes). Elsewhere (the local runtime, where
// containers are processes of this machine) a project with a service container is refused at
// start, saying which mode runs it.
type ServiceRunner interface {
	RunsServices() bool
}

// Addresser is offered by runtimes where a container is not reached by its name and port: the
// local runtime, whose containers are processes of this machine sharing its network, each on
// a port picked for it. ${HOST} and ${PORT} in an export are then what it returns (ok false:
// not known, e.g. not started yet); elsewhere they are the container's name, which resolves on
// the project's network (a docker network alias, a Kubernetes Service), and its port.
type Addresser interface {
	AddressOf(p Project, c Container) (host string, port int, ok bool)
}

// runningContainers are a project's containers that a runtime runs: all but external ones,
// which are only their exports.
func (e *Engine) runningContainers(ctx context.Context, projectID string) ([]Container, error) {
	cs, err := e.store.ListContainers(ctx, projectID)
	if err != nil {
		return nil, err
	}
	return Running(cs), nil
}

func (e *Engine) runsServices() bool {
	sr, ok := e.runtime.(ServiceRunner)
	return ok && sr.RunsServices()
}

// addressOf is the host name and port other containers of p reach c by.
func (e *Engine) addressOf(p Project, c Container) (string, int) {
	if a, ok := e.runtime.(Addresser); ok && c.Runs() {
		if host, port, ok := a.AddressOf(p, c); ok {
			return host, port
		}
	}
	return c.Name, portOf(c)
}

// portOf is the port c listens on, as the containers connected to it see it.
func portOf(c Container) int {
	switch {
	case c.Port > 0:
		return c.Port
	case c.IsService() || c.Kind == KindExternal:
		return tesslate.DefaultInfraPort
	}
	return tesslate.DefaultAppPort
}

// ResolvedExports are c's exports resolved against c, as every container connected to it gets
// them, and the ${X} no one could resolve (left as written).
func (e *Engine) ResolvedExports(p Project, c Container) (map[string]string, []string) {
	host, port := e.addressOf(p, c)
	return tesslate.ResolveExports(c.Exports, host, port, c.Env)
}

// injectedEnv is what container c gets from the containers it connects to: the resolved exports
// of each, in connection order (a later one wins on a clash, as on the reference platform).
// With warn, exports left unresolved are logged (once per start, not at every exec).
func (e *Engine) injectedEnv(p Project, c Container, cs []Container, conns []Connection, warn bool) map[string]string {
	env := map[string]string{}
	for _, cn := range conns {
		if cn.From != c.Name {
			continue
		}
		i := slices.IndexFunc(cs, func(o Container) bool { return o.Name == cn.To })
		if i < 0 {
			continue
		}
		exports, unresolved := e.ResolvedExports(p, cs[i])
		if warn && len(unresolved) > 0 {
			e.log.Warn("exports left unresolved: no such key in its env", "project", p.Slug, "container", cn.To,
				"to", c.Name, "variables", strings.Join(unresolved, ", "))
		}
		maps.Copy(env, exports)
	}
	return env
}

// withInjectedEnv is c's env with what its connections inject beneath it.
func (e *Engine) withInjectedEnv(ctx context.Context, p Project, c Container) (map[string]string, error) {
	conns, err := e.store.ListConnections(ctx, p.ID)
	if err != nil {
		return nil, fmt.Errorf("list connections of %s: %w", p.Slug, err)
	}
	if !slices.ContainsFunc(conns, func(cn Connection) bool { return cn.From == c.Name }) {
		return c.Env, nil
	}
	cs, err := e.store.ListContainers(ctx, p.ID)
	if err != nil {
		return nil, fmt.Errorf("list containers of %s: %w", p.Slug, err)
	}
	env := e.injectedEnv(p, c, cs, conns, false)
	maps.Copy(env, c.Env)
	return env, nil
}

// specsFromConfig are the containers and connections of a .tesslate/config.json.
func specsFromConfig(cfg tesslate.Config) ([]ContainerSpec, []Connection) {
	var specs []ContainerSpec
	for _, name := range slices.Sorted(maps.Keys(cfg.Apps)) {
		a := cfg.Apps[name]
		dir := a.Directory
		if dir == "" {
			dir = "."
		}
		specs = append(specs, ContainerSpec{Name: name, Directory: dir, Port: a.AppPort(), Command: a.Start,
			Env: a.Env, Image: a.Image, Exports: a.Exports, Resources: Resources(a.Resources),
			Primary: name == cfg.PrimaryApp})
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Infrastructure)) {
		n := cfg.Infrastructure[name]
		s := ContainerSpec{Name: name, Directory: ".", Port: n.ServicePort(), Command: n.Start, Env: n.Env, Exports: n.Exports,
			Resources: Resources(n.Resources)}
		if n.Type == tesslate.TypeExternal {
			s.Kind, s.Endpoint = KindExternal, n.Endpoint
		} else {
			s.Kind, s.Image, s.DataPath = KindService, n.Image, n.DataPath()
		}
		specs = append(specs, s)
	}
	var conns []Connection
	for _, cn := range cfg.Connections {
		if !slices.ContainsFunc(conns, func(o Connection) bool { return o.From == cn.From && o.To == cn.To }) {
			conns = append(conns, Connection{From: cn.From, To: cn.To})
		}
	}
	return specs, conns
}

// readLocalConfig reads .tesslate/config.json of a directory of this machine (project create
// --from). found is false when there is none.
func readLocalConfig(dir string) (cfg tesslate.Config, found bool, err error) {
	f := filepath.Join(dir, filepath.FromSlash(tesslate.ConfigPath))
	data, err := os.ReadFile(f)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, true, fmt.Errorf("read %s: %w", f, err)
	}
	cfg, err = tesslate.ParseConfig(data)
	if err != nil {
		return cfg, true, fmt.Errorf("%s: %w", dir, badConfig(err))
	}
	return cfg, true, nil
}

// badConfig marks a config.json that was refused as bad input, keeping its message.
func badConfig(err error) error { return fmt.Errorf("%w: %w", err, ErrBadInput) }

// syncConfig reads the project's .tesslate/config.json again, as a start reads TESSLATE.md
// again: a node whose definition changed is updated, a new one is added with its connections.
// Containers it does not name stay (they may have been added with container add); so do
// connections. A project without the file is left alone.
func (e *Engine) syncConfig(ctx context.Context, p Project) error {
	if fr, ok := e.runtime.(FilesReadier); ok && !fr.FilesReady(ctx, p) {
		// No process to read it through right now (the file manager is starting): the start
		// goes on with the definitions read last time rather than wait for one.
		e.log.Debug("not reading "+tesslate.ConfigPath+" again: no file manager running yet", "project", p.Slug)
		return nil
	}
	var buf bytes.Buffer
	err := e.runtime.ReadFile(ctx, p, tesslate.ConfigPath, &buf)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		if rf, ok := e.runtime.(RemoteFiles); ok && rf.FilesNeedProcess() {
			// Starting never depends on the file manager (see RemoteFiles): go on with the
			// definitions read last time.
			e.log.Warn("could not read "+tesslate.ConfigPath+"; starting with the stored definitions", "project", p.Slug, "err", err)
			return nil
		}
		return fmt.Errorf("read %s: %w", tesslate.ConfigPath, err)
	}
	cfg, err := tesslate.ParseConfig(buf.Bytes())
	if err != nil {
		return badConfig(err)
	}
	specs, conns := specsFromConfig(cfg)
	cur, err := e.store.ListContainers(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	for _, s := range specs {
		i := slices.IndexFunc(cur, func(c Container) bool { return c.Name == s.Name })
		c, err := containerFrom(p.ID, s, e.now())
		if err != nil {
			return fmt.Errorf("%s: %w", tesslate.ConfigPath, err)
		}
		if i >= 0 {
			old := cur[i]
			c.CreatedAt, c.GitURL, c.GitBranch = old.CreatedAt, old.GitURL, old.GitBranch
			if c.Command == "" && old.OwnCommand {
				// The file says nothing of its command; the one a person gave it stands.
				c.Command, c.OwnCommand = old.Command, true
			}
			if sameDefinition(old, c) {
				continue
			}
		} else if err := e.checkNameRivals(ctx, p, c.Name); err != nil {
			return fmt.Errorf("%s: %w", tesslate.ConfigPath, err)
		}
		if err := e.store.PutContainer(ctx, c); err != nil {
			return fmt.Errorf("record container %s from %s: %w", c.Name, tesslate.ConfigPath, err)
		}
	}
	have, err := e.store.ListConnections(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("list connections: %w", err)
	}
	for _, cn := range conns {
		if slices.ContainsFunc(have, func(o Connection) bool { return o.From == cn.From && o.To == cn.To }) {
			continue
		}
		cn.ProjectID = p.ID
		if err := e.store.PutConnection(ctx, cn); err != nil {
			return fmt.Errorf("record connection %s -> %s from %s: %w", cn.From, cn.To, tesslate.ConfigPath, err)
		}
	}
	return nil
}

func sameDefinition(a, b Container) bool {
	return a.Directory == b.Directory && a.Port == b.Port && a.Command == b.Command && a.OwnCommand == b.OwnCommand &&
		maps.Equal(a.Env, b.Env) && a.Kind == b.Kind && a.Image == b.Image && a.DataPath == b.DataPath &&
		maps.Equal(a.Exports, b.Exports) && a.Resources == b.Resources && a.Primary == b.Primary &&
		a.Endpoint == b.Endpoint
}

// checkRunnable refuses, before anything starts, a project this runtime cannot run whole: a
// service container where containers are processes of this machine.
func (e *Engine) checkRunnable(p Project, cs []Container) error {
	if e.runsServices() {
		// A service whose data no snapshot of this mode could hold would make its project
		// one that never hibernates: refused before it runs, not at its first hibernation.
		if sv, ok := e.volumes.(ServiceVolumes); ok && sv.CapturesServiceVolumes() {
			return nil
		}
		for _, c := range cs {
			if c.IsService() {
				return fmt.Errorf("start %s: service container %s keeps data in a volume of its own, which the %s snapshots of this setup cannot hold (so the project could never hibernate); use CSI snapshots (K8S_SNAPSHOT_CLASS) or docker mode: %w",
					p.Slug, c.Name, e.volumes.Name(), ErrBadInput)
			}
		}
		return nil
	}
	var svcs []string
	for _, c := range cs {
		switch {
		case c.IsService():
			svcs = append(svcs, fmt.Sprintf("%s (%s)", c.Name, c.Image))
		case c.Image != "":
			// An app's image is its environment in docker and kubernetes; here it runs on
			// this machine as it is.
			e.log.Warn("the "+e.runtime.Mode()+" runtime runs containers on this machine; the app's image is not used here",
				"project", p.Slug, "container", c.Name, "image", c.Image)
		}
	}
	if len(svcs) == 0 {
		return nil
	}
	why := ""
	if e.runtime.Mode() == "local" {
		why = " (its containers are processes of this machine)"
	}
	return fmt.Errorf("start %s: service container %s runs an image of its own, which the %s runtime cannot run%s; run the project in docker mode (DEPLOYMENT_MODE=docker) or kubernetes mode: %w",
		p.Slug, strings.Join(svcs, ", "), e.runtime.Mode(), why, ErrBadInput)
}

// snapshotParts names the parts a snapshot of p must hold besides its files: the data volume of
// every service container, where the runtime runs them (elsewhere they never had a volume).
func (e *Engine) snapshotParts(ctx context.Context, p Project) ([]SnapshotPart, error) {
	if !e.runsServices() {
		return nil, nil
	}
	cs, err := e.store.ListContainers(ctx, p.ID)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var parts []SnapshotPart
	for _, c := range cs {
		if c.IsService() {
			parts = append(parts, SnapshotPart{Name: c.Name, UnpackedBytes: -1})
		}
	}
	if len(parts) > 0 {
		if sv, ok := e.volumes.(ServiceVolumes); !ok || !sv.CapturesServiceVolumes() {
			// Never a snapshot without them: a hibernation would then delete their data.
			return nil, fmt.Errorf("the %s snapshots cannot hold the data volumes of service containers (%s): %w",
				e.volumes.Name(), partNames(parts), ErrBadInput)
		}
	}
	return parts, nil
}

func partNames(parts []SnapshotPart) string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// ServiceVolumes is offered by Volumes that capture the data volumes of service containers:
// Create fills every part of Snapshot.Parts it is given (one per service volume), WaitReady
// verifies each, Restore restores each and Delete removes each.
type ServiceVolumes interface {
	CapturesServiceVolumes() bool
}

// Part is part i of s as a snapshot of its own: the ID, location, sizes and checksum of that one
// volume, with s's project, owner and type. Volumes store and verify a part as they would a
// whole snapshot of one volume; SetPart records the result.
func (s Snapshot) Part(i int) Snapshot {
	pt := s.Parts[i]
	return Snapshot{ID: s.ID + "." + pt.Name, ProjectID: s.ProjectID, Owner: s.Owner, Type: s.Type,
		Label: s.Label, Status: s.Status, CreatedAt: s.CreatedAt, Backend: s.Backend,
		Location: pt.Location, SizeBytes: pt.SizeBytes, CapacityBytes: pt.CapacityBytes, UnpackedBytes: pt.UnpackedBytes, SHA256: pt.SHA256}
}

// SetPart records sub, the result of storing part i (see Part), in s.
func (s *Snapshot) SetPart(i int, sub Snapshot) {
	pt := &s.Parts[i]
	pt.Location, pt.SizeBytes, pt.CapacityBytes, pt.UnpackedBytes, pt.SHA256 = sub.Location, sub.SizeBytes, sub.CapacityBytes, sub.UnpackedBytes, sub.SHA256
}
