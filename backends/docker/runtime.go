// Package docker is the runtime of DEPLOYMENT_MODE=docker: each project container is a Docker
// container on the Docker Engine this process finds (DOCKER_HOST or the local socket), reached
// through the Engine API with the official client and API-version negotiation, so an older
// engine works as well as a new one.
//
// Per project there is a bridge network <prefix>-<slug> and, for each container the engine
// starts, one Docker container named <slug>-<container> on it, reachable by the other
// containers of the project under its own name and by no container of any other project. Each
// carries the labels docker compose uses (so `docker compose -p <slug> ps` lists them) and the
// Traefik labels that route Host(`<slug>-<container>.<AppDomain>`) to its port; its port is also
// published on 127.0.0.1 at a port the engine picks, for this machine. The project's files live
// in a host directory, <ProjectsDir>/<owner>/<slug>, bind-mounted at /app, or with
// Config.Volumes in a named volume <prefix>-<slug> mounted at /app (see volumes.go); a
// container runs as a non-root user in /app/<its directory>. The compose file equivalent to
// what is running is written to <StateDir>/docker-compose-projects/<slug>.yml for humans.
//
// Nothing of this process's environment reaches a container: a container gets the variables
// of its container record and start spec, and the runtime's own (PORT, PROJECT_ID,
// CONTAINER_ID, CONTAINER_NAME), so store or object-store credentials stay out.
//
// Stopping a container removes it (its files stay in the project directory, its log is kept
// under <StateDir>/docker-logs until the next stop or the hibernation): the next start
// creates it afresh with the spec it is given, in a few hundred milliseconds. A container whose
// command ended by itself is kept, so its exit code and log can be read, until it is stopped or
// started again.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/internal/containers"
	"github.com/sailtui/sailtui/backends/internal/trash"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/capped"
	"github.com/sailtui/sailtui/engine/cpurate"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// Defaults of Config.
const (
	DefaultImage         = "tesslate-devserver:latest"
	DefaultAppDomain     = "localhost"
	DefaultNetworkPrefix = "sailtui"
	DefaultMountPath     = "/app"
	DefaultPublishHost   = "127.0.0.1"
	DefaultStopTimeout   = 5 * time.Second
	// DefaultPort is the container port when the start spec names none.
	DefaultPort = 3000
	// DefaultMaxOutput caps each of an exec's stdout and stderr when the request sets no cap.
	DefaultMaxOutput = capped.DefaultMax
)

// Labels the runtime puts on what it creates. The sailtui ones find a project's containers
// again; the compose ones make docker compose see them as a project.
const (
	LabelManaged   = "sailtui.managed"
	LabelProjectID = "sailtui.project.id"
	LabelProject   = "sailtui.project"
	LabelContainer = "sailtui.container"

	composeProject    = "com.docker.compose.project"
	composeService    = "com.docker.compose.service"
	composeOneoff     = "com.docker.compose.oneoff"
	composeNumber     = "com.docker.compose.container-number"
	composeWorkingDir = "com.docker.compose.project.working_dir"
	composeConfig     = "com.docker.compose.project.config_files"
	composeVersion    = "com.docker.compose.version"
	composeNetwork    = "com.docker.compose.network"
	composeVolume     = "com.docker.compose.volume"
	// composeVersionValue is the compose version the labels imitate.
	composeVersionValue = "2.0.0"
)

// Config places the runtime. The zero value of every field but ProjectsDir and StateDir has a
// usable default.
type Config struct {
	// Client talks to the Docker Engine. nil: one from the environment (DOCKER_HOST,
	// DOCKER_API_VERSION, DOCKER_CERT_PATH...) with API-version negotiation.
	Client *client.Client
	// ProjectsDir holds the project trees: <ProjectsDir>/<owner>/<slug>.
	ProjectsDir string
	// StateDir holds the generated compose files, <StateDir>/docker-compose-projects/<slug>.yml,
	// and the start records they are made from.
	StateDir string
	// Image is what every container runs (DEVSERVER_IMAGE; default DefaultImage, which `make
	// image` builds: dockertest/mkimage). It needs a POSIX sh, and tr, grep and kill for Exec's
	// timeout to find and kill what a command left.
	Image string
	// AppDomain is the domain of the Traefik routes: <slug>-<container>.<AppDomain>.
	AppDomain string
	// NetworkPrefix starts every project network's name: <NetworkPrefix>-<slug>.
	NetworkPrefix string
	// User is the "uid:gid" containers run as. Default: this process's own ids, or 1000:1000
	// when it runs as root (files it writes are then given to that user).
	User string
	// MountPath is where the project directory appears in a container (default /app).
	MountPath string
	// PublishHost is the host address container ports are published on (default 127.0.0.1).
	PublishHost string
	// StopTimeout is how long a stopping container gets between SIGTERM and SIGKILL.
	StopTimeout time.Duration
	// LogMaxBytes caps each container's kept log on disk, current and rotated file together
	// (default 8 MiB; see logs.go).
	LogMaxBytes int64
	// DirectURLs makes ContainerStatus.URL the loopback URL, for a machine with no Traefik in
	// front of the engine; otherwise URL is http://<slug>-<container>.<AppDomain>/.
	DirectURLs bool
	// Router, when set, is the name of the Traefik container: it is connected to every project
	// network, since containers of a project are on no network Traefik is on otherwise.
	Router string
	// Labels are added to every container, network and volume the runtime creates.
	Labels map[string]string
	// Volumes keeps each project's files in a named volume, <NetworkPrefix>-<slug>, instead of
	// a host directory under ProjectsDir (USE_DOCKER_VOLUMES). File operations, snapshots and
	// restores then work on the volume's directory on the Docker host (its Mountpoint), so
	// this process must run on the Docker host itself, with access to the Docker root
	// directory (as root, normally): a runtime talking to a remote daemon refuses them with an
	// error that says so.
	Volumes bool
	// ReadOnly deletes nothing behind the engine's back: what waits in the trash stays there
	// (--readonly; the engine refuses every change itself).
	ReadOnly bool
}

// Runtime implements engine.Runtime and engine.TreeImporter on the Docker Engine.
type Runtime struct {
	cfg     Config
	cli     *client.Client
	ownCli  bool
	owner   hostfs.Owner
	chown   bool
	publish netip.Addr

	// netMu serialises network creation in this process: the engine accepts two networks of
	// one name, and a project must have one.
	netMu sync.Mutex
	// composeMu serialises writes of start records and compose files.
	composeMu sync.Mutex
	// pauseMu serialises changes to the pause records (pause.go) in this process.
	pauseMu sync.Mutex
	// trash deletes torn-down host directories in the background (<StateDir>/.sailtui-trash:
	// beside ProjectsDir, where no owner's directory can take its name): a hibernation returns
	// at archive speed. Volumes (DOCKER_VOLUMES) cannot be renamed, and are removed in place.
	trash *trash.Bin
	// Reaper is the engine.Reaper over trash.
	trash.Reaper
	// cpu keeps the last CPU reading of each container for the next Usage (usage.go).
	cpu cpurate.Sampler
}

// The torn-down trees go to a trash bin and are deleted in the background (Reaper).
var _ engine.Reaper = (*Runtime)(nil)

var (
	_ engine.Runtime      = (*Runtime)(nil)
	_ engine.TreeImporter = (*Runtime)(nil)
)

// New checks cfg, fills its defaults and returns a Runtime. It does not contact the engine:
// a daemon that is down shows in the first operation, with what that operation was.
func New(cfg Config) (*Runtime, error) {
	if cfg.ProjectsDir == "" || cfg.StateDir == "" {
		return nil, fmt.Errorf("docker runtime: ProjectsDir and StateDir must be set: %w", engine.ErrBadInput)
	}
	for _, d := range []*string{&cfg.ProjectsDir, &cfg.StateDir} {
		abs, err := filepath.Abs(*d)
		if err != nil {
			return nil, fmt.Errorf("docker runtime: %w", err)
		}
		*d = abs
	}
	if err := os.MkdirAll(cfg.ProjectsDir, 0o755); err != nil {
		return nil, fmt.Errorf("docker runtime: create projects directory: %w", err)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("docker runtime: create state directory: %w", err)
	}
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.AppDomain == "" {
		cfg.AppDomain = DefaultAppDomain
	}
	if cfg.NetworkPrefix == "" {
		cfg.NetworkPrefix = DefaultNetworkPrefix
	}
	if cfg.MountPath == "" {
		cfg.MountPath = DefaultMountPath
	}
	if !strings.HasPrefix(cfg.MountPath, "/") || strings.Contains(cfg.MountPath, "..") {
		return nil, fmt.Errorf("docker runtime: mount path %q must be absolute: %w", cfg.MountPath, engine.ErrBadInput)
	}
	if cfg.PublishHost == "" {
		cfg.PublishHost = DefaultPublishHost
	}
	addr, err := netip.ParseAddr(cfg.PublishHost)
	if err != nil {
		return nil, fmt.Errorf("docker runtime: publish host %q: %w", cfg.PublishHost, engine.ErrBadInput)
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.Volumes && !volumeNameRE.MatchString(cfg.NetworkPrefix) {
		return nil, fmt.Errorf("docker runtime: prefix %q cannot start a volume name: use letters, digits, '_', '.' and '-', starting with a letter or digit: %w", cfg.NetworkPrefix, engine.ErrBadInput)
	}
	bin := trash.Open(cfg.StateDir, trash.Options{ReadOnly: cfg.ReadOnly})
	r := &Runtime{cfg: cfg, publish: addr, trash: bin, Reaper: bin.Reaper()}
	if err := r.setUser(); err != nil {
		return nil, err
	}
	if cfg.Client == nil {
		// The client negotiates the API version with the engine on first use (the default
		// since moby/moby/client v0.1), down to API 1.40 (Docker 19.03).
		cli, err := client.New(client.FromEnv)
		if err != nil {
			return nil, fmt.Errorf("docker runtime: client: %w", err)
		}
		r.cli, r.ownCli = cli, true
	} else {
		r.cli = cfg.Client
	}
	return r, nil
}

// setUser settles who containers run as and whether this process must give files to them.
func (r *Runtime) setUser() error {
	if r.cfg.User == "" {
		uid, gid := os.Geteuid(), os.Getegid()
		if uid <= 0 {
			uid, gid = 1000, 1000
		}
		r.cfg.User = fmt.Sprintf("%d:%d", uid, gid)
	}
	u, g, ok := strings.Cut(r.cfg.User, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return fmt.Errorf("docker runtime: user %q: want numeric uid:gid: %w", r.cfg.User, engine.ErrBadInput)
	}
	if uid == 0 {
		return fmt.Errorf("docker runtime: user %q: containers do not run as root: %w", r.cfg.User, engine.ErrBadInput)
	}
	r.owner = hostfs.Owner{UID: uid, GID: gid}
	// Only root can give files away; any other process runs containers as itself by default,
	// and with another User the files it writes stay its own.
	r.chown = os.Geteuid() == 0
	return nil
}

// Close releases the client the runtime made (not one it was given).
func (r *Runtime) Close() error {
	if r.ownCli {
		return r.cli.Close()
	}
	return nil
}

// Mode is "docker".
func (r *Runtime) Mode() string { return "docker" }

// Config is the runtime's configuration with its defaults filled in.
func (r *Runtime) Config() Config { return r.cfg }

func (r *Runtime) containerName(p engine.Project, c engine.Container) string {
	return p.Slug + "-" + c.Name
}

func (r *Runtime) networkName(p engine.Project) string {
	return r.cfg.NetworkPrefix + "-" + p.Slug
}

// Host is the host name Traefik routes to the container (engine.HostNamer: the waker finds
// the project of a request by it).
func (r *Runtime) Host(p engine.Project, c engine.Container) string {
	return r.containerName(p, c) + "." + r.cfg.AppDomain
}

// baseLabels are on every container and network of the project.
func (r *Runtime) baseLabels(p engine.Project) map[string]string {
	l := map[string]string{}
	for k, v := range r.cfg.Labels {
		l[k] = v
	}
	l[LabelManaged] = "true"
	l[LabelProjectID] = p.ID
	l[LabelProject] = p.Slug
	l[composeProject] = p.Slug
	return l
}

// EnsureProject creates the project directory or volume (given to the container user) and the
// project network. Idempotent.
func (r *Runtime) EnsureProject(ctx context.Context, p engine.Project) error {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return fmt.Errorf("ensure project: %w", err)
	}
	if r.cfg.Volumes {
		if err := r.ensureVolume(ctx, p); err != nil {
			return fmt.Errorf("ensure project %s: %w", p.Slug, err)
		}
	} else {
		if err := r.ensureDir(ctx, p); err != nil {
			return fmt.Errorf("ensure project %s: %w", p.Slug, err)
		}
	}
	if _, err := r.ensureNetwork(ctx, p); err != nil {
		return fmt.Errorf("ensure project %s: %w", p.Slug, err)
	}
	return nil
}

// ensureDir creates the project's host directory. A project that has no directory but a volume
// (made with Config.Volumes) is refused: an empty directory would hide its files.
func (r *Runtime) ensureDir(ctx context.Context, p engine.Project) error {
	dir := r.hostDir(p)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := r.refuseVolumeInHostMode(ctx, p); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.chown {
		return os.Chown(dir, r.owner.UID, r.owner.GID)
	}
	return nil
}

// ensureNetwork returns the id of the project network, creating it when missing. The engine
// does not refuse a second network of the same name, so two processes racing to create it
// may make two: both then keep the one with the lowest id and remove the other.
func (r *Runtime) ensureNetwork(ctx context.Context, p engine.Project) (string, error) {
	r.netMu.Lock()
	defer r.netMu.Unlock()
	name := r.networkName(p)
	if err := r.refuseOtherPrefix(ctx, p, name); err != nil {
		return "", err
	}
	ids, err := r.projectNetworks(ctx, p, name)
	if err != nil {
		return "", err
	}
	if len(ids) == 0 {
		labels := r.baseLabels(p)
		labels[composeNetwork] = "default"
		labels[composeVersion] = composeVersionValue
		if _, err := r.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels}); err != nil && !cerrdefs.IsConflict(err) {
			return "", fmt.Errorf("create network %s: %w", name, err)
		}
		if ids, err = r.projectNetworks(ctx, p, name); err != nil {
			return "", err
		}
		if len(ids) == 0 {
			return "", fmt.Errorf("network %s vanished right after it was created", name)
		}
	}
	for _, extra := range ids[1:] {
		_, _ = r.cli.NetworkRemove(ctx, extra, client.NetworkRemoveOptions{})
	}
	if r.cfg.Router != "" {
		_, err := r.cli.NetworkConnect(ctx, ids[0], client.NetworkConnectOptions{Container: r.cfg.Router})
		if err != nil && !cerrdefs.IsConflict(err) && !strings.Contains(err.Error(), "already exists") {
			return "", fmt.Errorf("connect router %s to network %s: %w", r.cfg.Router, name, err)
		}
	}
	return ids[0], nil
}

// refuseOtherPrefix fails when the project already has a network under another name: it was
// started with another SAILTUI_DOCKER_NETWORK_PREFIX, and a second network would split its
// containers between the two (each attached to both, names resolving on either). The label
// that names the project is the record of which prefix it runs under.
func (r *Runtime) refuseOtherPrefix(ctx context.Context, p engine.Project, name string) error {
	res, err := r.cli.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("label", LabelProjectID+"="+p.ID)})
	if err != nil {
		return fmt.Errorf("list networks: %w", err)
	}
	for _, n := range res.Items {
		if n.Name == name || n.Labels[LabelProjectID] != p.ID {
			continue
		}
		prefix := strings.TrimSuffix(n.Name, "-"+p.Slug)
		return fmt.Errorf("project %s runs on the Docker network %s (SAILTUI_DOCKER_NETWORK_PREFIX=%s), not %s; "+
			"set SAILTUI_DOCKER_NETWORK_PREFIX=%s again, or hibernate the project with it and wake it with the new one: %w",
			p.Slug, n.Name, prefix, name, prefix, engine.ErrBadState)
	}
	return nil
}

// networksNamed lists the ids of the networks called exactly name, lowest first.
func (r *Runtime) networksNamed(ctx context.Context, name string) ([]string, error) {
	res, err := r.cli.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("name", name)})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	var ids []string
	for _, n := range res.Items {
		if n.Name == name { // the filter matches substrings
			ids = append(ids, n.ID)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// projectNetworks is networksNamed for the project's own network. A network of that name whose
// labels say it is not the project's (of another sailtui with the same prefix, or of a deleted
// project whose slug was taken again) is refused with ErrExists: it is neither used nor removed.
func (r *Runtime) projectNetworks(ctx context.Context, p engine.Project, name string) ([]string, error) {
	res, err := r.cli.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("name", name)})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	var ids []string
	for _, n := range res.Items {
		if n.Name != name {
			continue
		}
		if n.Labels[LabelProjectID] != p.ID {
			return nil, fmt.Errorf("a Docker network named %s exists and is not this project's, so it is left alone; choose another SAILTUI_DOCKER_NETWORK_PREFIX or see sailtui doctor: %w", name, engine.ErrExists)
		}
		ids = append(ids, n.ID)
	}
	sort.Strings(ids)
	return ids, nil
}

// ProjectExists reports whether the project directory, or with Config.Volumes the project's
// volume, is there.
func (r *Runtime) ProjectExists(ctx context.Context, p engine.Project) (bool, error) {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return false, fmt.Errorf("project exists: %w", err)
	}
	if r.cfg.Volumes {
		ok, err := r.volumeExists(ctx, p)
		if err != nil {
			return false, fmt.Errorf("project exists %s: %w", p.Slug, err)
		}
		return ok, nil
	}
	ok, err := hostfs.ProjectDirExists(p.Slug, r.hostDir(p))
	if err == nil && !ok {
		// No directory, but the files may be in a volume (made with USE_DOCKER_VOLUMES=true):
		// that is not storage gone, and an empty directory must not be made in its place.
		if err := r.refuseVolumeInHostMode(ctx, p); errors.Is(err, engine.ErrBadState) {
			return false, err
		}
	}
	return ok, err
}

// StopProject stops (removes) the containers in cs and any other container of the project, so
// one the caller forgot about is not left running.
func (r *Runtime) StopProject(ctx context.Context, p engine.Project, cs []engine.Container) error {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return fmt.Errorf("stop project: %w", err)
	}
	names, err := r.containerNames(ctx, p, cs)
	if err != nil {
		return fmt.Errorf("stop project %s: %w", p.Slug, err)
	}
	return containers.StopAll(ctx, p, names, r.StopContainer)
}

// containerNames is the union of cs and the containers the engine holds for the project, sorted.
func (r *Runtime) containerNames(ctx context.Context, p engine.Project, cs []engine.Container) ([]string, error) {
	list, err := r.projectContainers(ctx, p)
	if err != nil {
		return nil, err
	}
	var held []string
	for _, c := range list {
		if n := c.Labels[LabelContainer]; n != "" {
			held = append(held, n)
		}
	}
	return containers.Names(cs, held), nil
}

// DestroyProject removes the project's containers, its network, its directory or volume (only
// the one of the configured mode: the other was not in the snapshot) and its compose file.
// Idempotent. The engine calls it only once a verified snapshot exists (invariant 1).
func (r *Runtime) DestroyProject(ctx context.Context, p engine.Project, cs []engine.Container) error {
	if err := hostfs.CheckName("project slug", p.Slug); err != nil {
		return fmt.Errorf("destroy project: %w", err)
	}
	if err := r.StopProject(ctx, p, cs); err != nil {
		// Removing the files under running containers would leave them serving a deleted tree.
		return fmt.Errorf("destroy project %s: %w", p.Slug, err)
	}
	if err := r.removeNetwork(ctx, p); err != nil {
		return fmt.Errorf("destroy project %s: %w", p.Slug, err)
	}
	var errs []error
	if err := r.removeServiceVolumes(ctx, p, cs); err != nil {
		errs = append(errs, err)
	}
	// The kept logs stay (see logs.go): a woken project's log goes on from where it was.
	dirs := []string{r.recordDir(p), r.startedDir(p.ID)}
	if r.cfg.Volumes {
		// A volume cannot be renamed out of the way: the engine deletes it in place.
		if err := r.removeVolume(ctx, p); err != nil {
			errs = append(errs, err)
		}
	} else if err := r.trash.Throw(r.hostDir(p), p.Slug); err != nil {
		// One rename; the tree is deleted in the background (backends/internal/trash).
		errs = append(errs, err)
	}
	for _, d := range dirs {
		if err := archive.RemoveTree(d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(r.ComposeFile(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroy project %s: %w", p.Slug, err)
	}
	return nil
}

func (r *Runtime) removeNetwork(ctx context.Context, p engine.Project) error {
	r.netMu.Lock()
	defer r.netMu.Unlock()
	name := r.networkName(p)
	ids, err := r.projectNetworks(ctx, p, name)
	if errors.Is(err, engine.ErrExists) {
		return nil // not this project's network: nothing of ours to remove
	}
	if err != nil {
		return err
	}
	for _, id := range ids {
		if r.cfg.Router != "" {
			_, _ = r.cli.NetworkDisconnect(ctx, id, client.NetworkDisconnectOptions{Container: r.cfg.Router, Force: true})
		}
		if _, err := r.cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("remove network %s: %w", name, err)
		}
	}
	return nil
}
