package docker

import (
	"context"
	"fmt"
	"maps"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/internal/containers"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// service is everything a container is created from: the start record kept for the compose
// file, and the input of the Engine API calls.
type service struct {
	Name          string            `json:"name"`
	ContainerName string            `json:"container_name"`
	Image         string            `json:"image"`
	User          string            `json:"user"`
	WorkingDir    string            `json:"working_dir"`
	Command       string            `json:"command"`
	Env           map[string]string `json:"env"`
	Port          int               `json:"port"`
	Labels        map[string]string `json:"labels"`
	// Source is the host directory bind-mounted at Target, unless Volume names the volume
	// mounted there instead (Config.Volumes).
	Source      string   `json:"source,omitempty"`
	Volume      string   `json:"volume,omitempty"`
	Target      string   `json:"target"`
	Network     string   `json:"network"`
	PublishHost string   `json:"publish_host"`
	DependsOn   []string `json:"depends_on,omitempty"`
	// Service: a service container (services.go), run as its image says: Command, User and
	// WorkingDir empty mean the image's own; Volume is its data volume, filled from the image.
	Service bool `json:"service,omitempty"`
}

// StartContainer creates and starts the container's Docker container: spec.Command run by
// `sh -c` as the runtime's user in /app/<directory>, the environment of spec.Env, c.Env and
// the runtime's own PORT (spec.Port, else 3000), PROJECT_ID, CONTAINER_ID and CONTAINER_NAME,
// spec.Port published on PublishHost at a port the engine picks. A running container is left
// alone and its status returned; a stopped or exited one is replaced, so a changed spec
// applies.
func (r *Runtime) StartContainer(ctx context.Context, p engine.Project, c engine.Container, spec engine.StartSpec) (engine.ContainerStatus, error) {
	return containers.Start(ctx, p, c, spec, r.startContainer)
}

func (r *Runtime) startContainer(ctx context.Context, p engine.Project, c engine.Container, spec engine.StartSpec) (engine.ContainerStatus, error) {
	if err := engine.CheckContainerName(c.Name); err != nil {
		return engine.ContainerStatus{}, err
	}
	if err := spec.CheckCommand(!c.IsService()); err != nil {
		return engine.ContainerStatus{}, err
	}
	dir, err := r.projectDir(ctx, p)
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	if err := r.fixOwnership(ctx, dir); err != nil {
		return engine.ContainerStatus{}, err
	}
	cdir, err := engine.CleanRel(c.Directory)
	if err != nil {
		return engine.ContainerStatus{}, fmt.Errorf("container directory: %w", err)
	}
	work, err := r.tree(dir).Dir(cdir)
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	name := r.containerName(p, c)
	ins, err := r.inspect(ctx, name)
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	if ins != nil {
		// Before anything else is done for it: a container of another project is not touched.
		if err := r.owns(p, ins); err != nil {
			return engine.ContainerStatus{}, err
		}
	}
	// The network (and the router's connection to it) first, whatever state the container is
	// in: a start converges the environment, and a running container may have lost its network
	// behind sailtui's back (disconnected, the network removed by hand).
	netID, err := r.ensureNetwork(ctx, p)
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	// A pause left by a sailtui that died mid-snapshot would read as running and be left alone.
	ins, paused, err := r.settlePause(ctx, p, name, ins)
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	if ins != nil {
		if ins.State != nil && ins.State.Running {
			if err := r.ensureAttached(ctx, ins, netID, c.Name); err != nil {
				return engine.ContainerStatus{}, err
			}
			if ins, err = r.inspect(ctx, name); err != nil {
				return engine.ContainerStatus{}, err
			}
			if ins == nil {
				return engine.ContainerStatus{}, fmt.Errorf("container %s vanished while it was being reattached: %w", name, engine.ErrConflict)
			}
			// One started before sailtui kept records is recorded as started now.
			if !r.wasStarted(p, c.Name) {
				if err := r.noteStarted(p, c.Name); err != nil {
					return engine.ContainerStatus{}, err
				}
			}
			return r.statusPaused(p, c, ins, paused), nil
		}
	}
	// Until the new container runs, its absence is this start's doing (a start that fails
	// leaves it stopped, not missing), and the exited one is removed by sailtui.
	if err := r.forgetStarted(p, c.Name); err != nil {
		return engine.ContainerStatus{}, err
	}
	if ins != nil {
		// One that exited on its own: what it said goes to the kept log before it goes.
		_ = r.saveLog(ctx, p, c.Name, ins.ID, exitMarker(ins))
		if err := r.remove(ctx, ins.ID); err != nil {
			return engine.ContainerStatus{}, err
		}
	}
	var svc service
	if c.IsService() {
		svc, err = r.serviceSpec(ctx, p, c, spec)
	} else {
		svc, err = r.service(p, c, spec, dir, work)
	}
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	if err := r.saveService(p, svc); err != nil {
		return engine.ContainerStatus{}, err
	}
	// The host port the container had before, while it is free: its URL keeps working across
	// stops, restores and wakes. Taken meanwhile, the engine picks another.
	kept := r.keptPort(p, c.Name)
	marked := false
	for {
		created, err := r.create(ctx, svc, netID, kept)
		if cerrdefs.IsConflict(err) {
			// Another start of the same container won the race: it is that one's to start.
			if ins, ierr := r.inspect(ctx, name); ierr == nil && ins != nil {
				return r.status(p, c, ins), nil
			}
		}
		if err != nil {
			return engine.ContainerStatus{}, err
		}
		if !marked {
			// Only once there is a container (a missing image fails the create: nothing
			// started), and before it runs, so the marker comes before what it writes.
			r.mark(p, c.Name, engine.LogMarkStarted)
			marked = true
		}
		if _, err := r.cli.ContainerStart(ctx, created, client.ContainerStartOptions{}); err != nil {
			_ = r.remove(context.WithoutCancel(ctx), created)
			if kept != 0 && portTaken(err) {
				kept = 0
				continue
			}
			return engine.ContainerStatus{}, fmt.Errorf("start container %s: %w", name, err)
		}
		break
	}
	if err := r.noteStarted(p, c.Name); err != nil {
		// It runs, but gone later it would read as stopped; said now, while a stop can be
		// asked for.
		return engine.ContainerStatus{}, err
	}
	ins, err = r.inspect(ctx, name)
	if err != nil {
		return engine.ContainerStatus{}, err
	}
	if hp := hostPort(ins); hp > 0 && hp != kept {
		// Not kept, the port is only picked afresh next time: the start itself went well.
		_ = r.keepPort(p, c.Name, hp)
	}
	return r.status(p, c, ins), nil
}

// ensureAttached connects a running container to the project network netID, under its
// container name as the other containers of the project reach it, unless it is on it already.
// It is then on no stale network of the project's name either: a network that was removed and
// made again has a new id, and the old endpoint would only shadow the new one.
func (r *Runtime) ensureAttached(ctx context.Context, ins *container.InspectResponse, netID, alias string) error {
	if ins.NetworkSettings != nil {
		for _, ep := range ins.NetworkSettings.Networks {
			if ep != nil && ep.NetworkID == netID {
				return nil
			}
		}
	}
	name := strings.TrimPrefix(ins.Name, "/")
	_, err := r.cli.NetworkConnect(ctx, netID, client.NetworkConnectOptions{
		Container:      ins.ID,
		EndpointConfig: &network.EndpointSettings{Aliases: []string{alias}},
	})
	if err != nil && !cerrdefs.IsConflict(err) && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("reconnect container %s to its project network: %w", name, err)
	}
	return nil
}

// service resolves what container c is created from.
func (r *Runtime) service(p engine.Project, c engine.Container, spec engine.StartSpec, dir, work string) (service, error) {
	port := spec.Port
	if port <= 0 {
		port = DefaultPort
	}
	if port > 65535 {
		return service{}, fmt.Errorf("port %d out of range 1-65535: %w", port, engine.ErrBadInput)
	}
	name := r.containerName(p, c)
	env := map[string]string{}
	maps.Copy(env, spec.Env)
	maps.Copy(env, c.Env)
	maps.Copy(env, map[string]string{
		"PORT":           strconv.Itoa(port),
		"PROJECT_ID":     p.ID,
		"PROJECT_SLUG":   p.Slug,
		"CONTAINER_ID":   name,
		"CONTAINER_NAME": c.Name,
	})
	if _, err := envList(env); err != nil {
		return service{}, err
	}
	labels := r.containerLabels(p, c)
	router := name
	maps.Copy(labels, map[string]string{
		"traefik.enable":                                                "true",
		"traefik.docker.network":                                        r.networkName(p),
		"traefik.http.routers." + router + ".rule":                      "Host(`" + r.Host(p, c) + "`)",
		"traefik.http.routers." + router + ".service":                   router,
		"traefik.http.services." + router + ".loadbalancer.server.port": strconv.Itoa(port),
	})
	routable(labels)
	source, vol := dir, ""
	if r.cfg.Volumes {
		source, vol = "", r.volumeName(p)
	}
	return service{
		Name:          c.Name,
		ContainerName: name,
		Image:         r.cfg.Image,
		User:          r.cfg.User,
		WorkingDir:    path.Join(r.cfg.MountPath, work),
		Command:       spec.Command,
		Env:           env,
		Port:          port,
		Labels:        labels,
		Source:        source,
		Volume:        vol,
		Target:        r.cfg.MountPath,
		Network:       r.networkName(p),
		PublishHost:   r.cfg.PublishHost,
		DependsOn:     spec.DependsOn,
	}, nil
}

// containerLabels are the labels of container c of p: the project's, its own name, and the
// compose labels that make `docker compose -p <slug>` list it as a service of its file.
func (r *Runtime) containerLabels(p engine.Project, c engine.Container) map[string]string {
	labels := r.baseLabels(p)
	maps.Copy(labels, map[string]string{
		LabelContainer:    c.Name,
		composeService:    c.Name,
		composeOneoff:     "False",
		composeNumber:     "1",
		composeWorkingDir: r.composeDir(),
		composeConfig:     r.ComposeFile(p),
		composeVersion:    composeVersionValue,
	})
	return labels
}

// create makes the Docker container of svc on network netID, its port published at hostPort
// (0: one the engine picks), and returns its id.
func (r *Runtime) create(ctx context.Context, svc service, netID string, hostPort int) (string, error) {
	env, err := envList(svc.Env)
	if err != nil {
		return "", err
	}
	port, err := network.ParsePort(strconv.Itoa(svc.Port) + "/tcp")
	if err != nil {
		return "", fmt.Errorf("port %d: %w", svc.Port, err)
	}
	stop := int(r.cfg.StopTimeout.Round(time.Second) / time.Second)
	init := true
	mnt := mount.Mount{Type: mount.TypeBind, Source: svc.Source, Target: svc.Target}
	switch {
	case svc.Service:
		// A service's data volume starts as the image's data directory, owner included.
		mnt = mount.Mount{Type: mount.TypeVolume, Source: svc.Volume, Target: svc.Target}
	case svc.Volume != "":
		// NoCopy: the volume holds the project's files and nothing else; an empty one is not
		// filled from the image (nor given the owner of the image's directory).
		mnt = mount.Mount{Type: mount.TypeVolume, Source: svc.Volume, Target: svc.Target, VolumeOptions: &mount.VolumeOptions{NoCopy: true}}
	}
	entrypoint, cmd := []string{"sh", "-c", svc.Command}, []string{}
	if svc.Service && svc.Command == "" {
		entrypoint, cmd = nil, nil // the image's own
	}
	res, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: svc.ContainerName,
		Config: &container.Config{
			Image:        svc.Image,
			User:         svc.User,
			Env:          env,
			WorkingDir:   svc.WorkingDir,
			Entrypoint:   entrypoint,
			Cmd:          cmd,
			ExposedPorts: network.PortSet{port: {}},
			Labels:       svc.Labels,
			StopTimeout:  &stop,
		},
		HostConfig: &container.HostConfig{
			Mounts:       []mount.Mount{mnt},
			NetworkMode:  container.NetworkMode(netID),
			PortBindings: network.PortMap{port: {{HostIP: r.publish, HostPort: publishedPort(hostPort)}}},
			// An init reaps what a dev server's scripts leave behind and passes the stop signal on.
			Init:      &init,
			LogConfig: container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "10m", "max-file": "3"}},
			// A daemon restart brings the project back as it was; a stop (which removes the
			// container) is not undone.
			RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyUnlessStopped},
		},
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			netID: {Aliases: []string{svc.Name}},
		}},
	})
	if cerrdefs.IsNotFound(err) && svc.Service && !r.imageExists(ctx, svc.Image) {
		return "", fmt.Errorf("image %s of service %s does not exist on the Docker Engine: pull or build it (docker pull %s): %w",
			svc.Image, svc.Name, svc.Image, engine.ErrNotFound)
	}
	if cerrdefs.IsNotFound(err) && !r.imageExists(ctx, svc.Image) {
		// Said without the container's name, so that a project whose every container fails
		// for it is told once (the engine joins failures of one cause).
		return "", fmt.Errorf("image %s (DEVSERVER_IMAGE) does not exist on the Docker Engine: build it with `make image` in the sailtui source tree, or set DEVSERVER_IMAGE to an image with a POSIX sh: %w",
			svc.Image, engine.ErrNotFound)
	}
	if err != nil && svc.Service && svc.Command == "" && strings.Contains(err.Error(), "No command specified") {
		// Docker's own words say nothing of where sailtui takes a service's command from.
		return "", fmt.Errorf("image %s of service %s has no command of its own (no ENTRYPOINT or CMD): give the service one, "+
			"as \"start\" of infrastructure.%s in .tesslate/config.json or with sailtui container add --service --command: %w",
			svc.Image, svc.Name, svc.Name, engine.ErrBadInput)
	}
	if err != nil {
		return "", fmt.Errorf("create container %s from image %s: %w", svc.ContainerName, svc.Image, err)
	}
	return res.ID, nil
}

// imageExists says whether the engine has the image; an engine that does not answer counts
// as having it, so that its own error is the one shown.
func (r *Runtime) imageExists(ctx context.Context, ref string) bool {
	_, err := r.cli.ImageInspect(ctx, ref)
	return !cerrdefs.IsNotFound(err)
}

func publishedPort(port int) string {
	if port <= 0 {
		return ""
	}
	return strconv.Itoa(port)
}

// envList turns an environment map into KEY=value entries, sorted, refusing what the kernel or
// the engine would (an empty key, "=" in a key, NUL bytes).
func envList(m map[string]string) ([]string, error) {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("environment variable %q is not valid: %w", k, engine.ErrBadInput)
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// fixOwnership gives a project tree that this process (root) made, such as a restored
// snapshot, to the container user, so the containers can change their own files. A tree whose
// root already belongs to that user is taken as done: everything the runtime writes is given
// to it as it is written.
func (r *Runtime) fixOwnership(ctx context.Context, dir string) error {
	if !r.chown {
		return nil
	}
	ok, err := hostfs.OwnedBy(dir, r.owner)
	if err != nil {
		return fmt.Errorf("project directory: %w", notFound(err))
	}
	if ok {
		return nil
	}
	// The root last, so an interrupted walk is done again next time.
	if err := hostfs.ChownAll(ctx, dir, hostfs.Owner{UID: r.owner.UID, GID: r.owner.GID}); err != nil {
		return fmt.Errorf("give the project files to the container user: %w", err)
	}
	return nil
}

// inspect finds a container by name; nil when there is none.
func (r *Runtime) inspect(ctx context.Context, name string) (*container.InspectResponse, error) {
	res, err := r.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect container %s: %w", name, err)
	}
	return &res.Container, nil
}

// owns refuses a container of the right name that belongs to another project (one of another
// sailtui, or a deleted project whose slug was taken again).
//
// The message never advises removing that container: its labels say it is not this project's,
// so it may be another project's live one. It says whose it is, as far as the labels tell.
func (r *Runtime) owns(p engine.Project, ins *container.InspectResponse) error {
	var labels map[string]string
	if ins.Config != nil {
		labels = ins.Config.Labels
	}
	if labels[LabelProjectID] == p.ID {
		return nil
	}
	name := strings.TrimPrefix(ins.Name, "/")
	whose := "something other than sailtui"
	if labels[LabelManaged] == "true" {
		whose = fmt.Sprintf("container %q of sailtui project %q", labels[LabelContainer], labels[LabelProject])
	}
	return fmt.Errorf("the Docker name %s is taken by %s, which is left alone; give this container another name (sailtui container rm, then container add): %w",
		name, whose, engine.ErrExists)
}

func (r *Runtime) remove(ctx context.Context, id string) error {
	_, err := r.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !strings.Contains(err.Error(), "already in progress") {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

// projectContainers lists every Docker container of the project, running or not.
func (r *Runtime) projectContainers(ctx context.Context, p engine.Project) ([]container.Summary, error) {
	res, err := r.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: client.Filters{}.Add("label", LabelProjectID+"="+p.ID),
	})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return res.Items, nil
}

// StopContainer stops the container (SIGTERM, then SIGKILL after StopTimeout) and removes it;
// its files stay. Stopping a container that is not there is not an error.
func (r *Runtime) StopContainer(ctx context.Context, p engine.Project, c engine.Container) error {
	return containers.Stop(ctx, p, c, r.stopContainer)
}

// stopContainer is StopContainer's own part; containers.Stop has checked p's slug.
func (r *Runtime) stopContainer(ctx context.Context, p engine.Project, c engine.Container) error {
	ins, err := r.inspect(ctx, r.containerName(p, c))
	if err != nil {
		return err
	}
	// Before the container goes: from here on, its absence is this stop's doing. Also when it
	// is gone already (missing), which a stop acknowledges.
	if err := r.forgetStarted(p, c.Name); err != nil {
		return err
	}
	if ins == nil || r.owns(p, ins) != nil {
		return nil // nothing of ours to stop
	}
	if ins.State != nil && ins.State.Paused {
		// A frozen container cannot act on SIGTERM: it would only wait out StopTimeout for the
		// kill. Whoever paused it, stopping is what is asked for now.
		if err := r.unpauseContainer(ctx, ins.ID); err != nil {
			return fmt.Errorf("%s: to stop it: %w", r.containerName(p, c), err)
		}
	}
	if ins.State != nil && ins.State.Running {
		timeout := int(r.cfg.StopTimeout.Round(time.Second) / time.Second)
		if _, err := r.cli.ContainerStop(ctx, ins.ID, client.ContainerStopOptions{Timeout: &timeout}); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("stop container %s: %w", r.containerName(p, c), err)
		}
	}
	// A log that cannot be kept does not hold the stop up: the container is stopped as asked,
	// and `logs` then shows what was kept before (or nothing).
	what := engine.LogMarkStopped
	if ins.State == nil || !ins.State.Running {
		what = exitMarker(ins)
	}
	_ = r.saveLog(ctx, p, c.Name, ins.ID, what)
	return r.remove(ctx, ins.ID)
}

// NameRivals implements engine.NameSharer. A container's Docker name is <slug>-<container>,
// and slugs and container names both hold '-': the name splits at each '-' into the slug of
// another project and a container name of it that would map to the same Docker name.
func (r *Runtime) NameRivals(p engine.Project, name string) (string, map[string]string) {
	full := r.containerName(p, engine.Container{Name: name})
	rivals := map[string]string{}
	for i := 0; i < len(full); i++ {
		if full[i] != '-' {
			continue
		}
		slug, cname := full[:i], full[i+1:]
		if slug == p.Slug || slug == "" || engine.CheckContainerName(cname) != nil {
			continue
		}
		rivals[slug] = cname
	}
	return full, rivals
}
