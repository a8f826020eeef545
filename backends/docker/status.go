package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// ContainerStatus reports the container as the engine sees it: running (with its published
// port and URLs), exited (with its exit code), stopped when there is no container, or missing
// when there is none but sailtui started it and did not stop it (removed by hand: started.go). A
// container paused for a snapshot in progress is running, with a detail that says so; one left
// paused by a sailtui that died mid-snapshot is unpaused first (see PauseProject).
func (r *Runtime) ContainerStatus(ctx context.Context, p engine.Project, c engine.Container) (engine.ContainerStatus, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("status %s: %w", c.Name, err)
	}
	name := r.containerName(p, c)
	ins, err := r.inspect(ctx, name)
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("status %s/%s: %w", p.Slug, c.Name, err)
	}
	ins, paused, err := r.settlePause(ctx, p, name, ins)
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("status %s/%s: %w", p.Slug, c.Name, err)
	}
	st := r.statusPaused(p, c, ins, paused)
	if c.IsService() {
		st.Volume = r.serviceVolumeName(p, c.Name)
	}
	return st, nil
}

// statusPaused is status, except that a container a snapshot in progress paused (detail set)
// reads as the running container it is again in a moment.
func (r *Runtime) statusPaused(p engine.Project, c engine.Container, ins *container.InspectResponse, detail string) engine.ContainerStatus {
	if detail == "" || ins == nil || ins.State == nil {
		return r.status(p, c, ins)
	}
	running, state := *ins, *ins.State
	state.Paused = false
	running.State = &state
	st := r.status(p, c, &running)
	st.Detail = detail
	return st
}

func (r *Runtime) status(p engine.Project, c engine.Container, ins *container.InspectResponse) engine.ContainerStatus {
	st := engine.ContainerStatus{Name: c.Name, State: engine.ContainerStopped}
	if ins == nil && r.wasStarted(p, c.Name) {
		st.State, st.Detail = engine.ContainerMissing, missingDetail(p, r.containerName(p, c))
		return st
	}
	if ins == nil || ins.State == nil {
		return st
	}
	if err := r.owns(p, ins); err != nil {
		st.Detail = err.Error()
		return st
	}
	st.Port = containerPort(ins)
	s := ins.State
	switch {
	case s.Restarting:
		// Between two runs of a command that keeps exiting: the restart policy (which is
		// there for daemon restarts) starts it again after a growing delay. What is true now
		// is that it exited, with this code, and is not serving.
		st.State = engine.ContainerExited
		st.ExitCode = s.ExitCode
		st.Detail = fmt.Sprintf("exit %d, restarting (%d restarts so far)", s.ExitCode, ins.RestartCount)
	case s.Running && !s.Paused:
		st.State = engine.ContainerRunning
		st.PID = s.Pid
		if t, err := time.Parse(time.RFC3339Nano, s.StartedAt); err == nil {
			st.StartedAt = t
		}
		st.HostPort = hostPort(ins)
		if isService(c, ins) {
			// Not routed, and no HTTP server as a rule (a database): no URL, only the port
			// it is published on, which probes and clients of this machine use.
			break
		}
		if st.HostPort > 0 {
			st.LocalURL = r.localURL(st.HostPort)
		}
		if r.cfg.DirectURLs {
			st.URL = st.LocalURL
		} else {
			st.URL = "http://" + r.Host(p, c) + "/"
			// The route is what a Traefik in front would serve; with none configured it may
			// not resolve, and the loopback port is what this machine can open.
			st.Unrouted = r.cfg.Router == ""
		}
	case s.Paused:
		st.Detail = "paused"
	case s.Status == container.StateExited || s.Status == container.StateDead:
		st.State = engine.ContainerExited
		st.ExitCode = s.ExitCode
		// The exit code where a detail is shown (the console shows it in the URL column).
		st.Detail = fmt.Sprintf("exit %d", s.ExitCode)
		if s.Error != "" {
			st.Detail += ": " + s.Error
		}
	}
	return st
}

// isService says whether the container is a service container: by its record, or by its
// label when the caller knows only its name (Describe of what the engine holds).
func isService(c engine.Container, ins *container.InspectResponse) bool {
	return c.IsService() || (ins.Config != nil && ins.Config.Labels[LabelKind] == string(engine.KindService))
}

// containerPort is the port the container was made to serve (its one exposed port).
func containerPort(ins *container.InspectResponse) int {
	if ins.Config == nil {
		return 0
	}
	for p := range ins.Config.ExposedPorts {
		return int(p.Num())
	}
	return 0
}

// localURL is the address this machine reaches a published port at.
func (r *Runtime) localURL(port int) string {
	return "http://" + net.JoinHostPort(r.cfg.PublishHost, strconv.Itoa(port)) + "/"
}

// hostPort is the host port the container's port is published on (0 when not yet bound).
func hostPort(ins *container.InspectResponse) int {
	if ins.NetworkSettings == nil {
		return 0
	}
	for _, bs := range ins.NetworkSettings.Ports {
		for _, b := range bs {
			if n, err := strconv.Atoi(b.HostPort); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

var _ engine.NameSharer = (*Runtime)(nil)

// portTaken says whether a container start failed because its host port is in use.
func portTaken(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use") ||
		strings.Contains(msg, "ports are not available")
}

// portsFile records the host port of each of the project's containers, by project id, so that
// a container gets its port again. It lives outside the project's records, which a hibernation
// removes, since a wake should give the old ports back.
func (r *Runtime) portsFile(p engine.Project) string {
	return filepath.Join(r.cfg.StateDir, "docker-ports", url.PathEscape(p.ID)+".json")
}

// keptPort is the host port container name last had (0: none recorded).
func (r *Runtime) keptPort(p engine.Project, name string) int {
	r.composeMu.Lock()
	defer r.composeMu.Unlock()
	return r.readPorts(p)[name]
}

func (r *Runtime) readPorts(p engine.Project) map[string]int {
	m := map[string]int{}
	if b, err := os.ReadFile(r.portsFile(p)); err == nil {
		_ = json.Unmarshal(b, &m) // a damaged record only loses the ports
	}
	return m
}

// keepPort records the host port of container name.
func (r *Runtime) keepPort(p engine.Project, name string, port int) error {
	r.composeMu.Lock()
	defer r.composeMu.Unlock()
	m := r.readPorts(p)
	m[name] = port
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	f := r.portsFile(p)
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return fmt.Errorf("record ports: %w", err)
	}
	tmp := f + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("record ports: %w", err)
	}
	return os.Rename(tmp, f)
}
