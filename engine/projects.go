package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine/tesslate"
)

// TreeImporter is offered by runtimes that can copy a directory of this machine into a project's
// storage (project create --from).
type TreeImporter interface {
	ImportTree(ctx context.Context, p Project, src string) error
}

// ContainerSpec describes a container to add.
type ContainerSpec struct {
	Name      string
	Directory string
	Port      int
	Command   string
	Env       map[string]string
	GitURL    string
	GitBranch string

	// What .tesslate/config.json says (see Container).
	Kind      ContainerKind
	Image     string
	DataPath  string
	Exports   map[string]string
	Resources Resources
	Primary   bool
	Endpoint  string
	// MakeDir creates Directory (empty but for a .gitkeep) when it is missing; without it a
	// missing directory is refused, as its container could never start.
	MakeDir bool
}

// CreateRequest describes a new project.
type CreateRequest struct {
	Name  string
	Owner string
	// FromDir is copied in. Its .tesslate/config.json, when it has one, says what the
	// containers are (apps, services, connections); otherwise every directory of it holding a
	// TESSLATE.md becomes a container.
	FromDir    string
	Containers []ContainerSpec
}

var slugUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// Slugify turns a name into a project slug: lower-case letters, digits and dashes, at most 40
// characters (it becomes part of DNS labels and container names).
func Slugify(name string) string {
	s := strings.Trim(slugUnsafe.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	return s
}

var containerName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// CheckContainerName enforces names that are valid as DNS labels and docker container suffixes.
func CheckContainerName(name string) error {
	if !containerName.MatchString(name) {
		return fmt.Errorf("container name %q: use 1-40 lower-case letters, digits and dashes, starting and ending with a letter or digit: %w", name, ErrBadInput)
	}
	return nil
}

// CleanDir checks a container directory by the one path rule (CleanRel); a backslash is
// refused too, as a directory name goes into compose files and shell scripts.
func CleanDir(dir string) (string, error) {
	if strings.Contains(dir, `\`) {
		return "", fmt.Errorf("directory %q: a backslash is not allowed in a container directory: %w", dir, ErrBadPath)
	}
	c, err := CleanRel(dir)
	if err != nil {
		return "", fmt.Errorf("container directory: %w", err)
	}
	return c, nil
}

// CreateProject makes a project: its record, its storage, and its containers. Creation counts as
// activity.
func (e *Engine) CreateProject(ctx context.Context, req CreateRequest) (Project, error) {
	if err := e.writable("create project"); err != nil {
		return Project{}, err
	}
	if err := checkText("project name", req.Name, MaxNameLength); err != nil {
		return Project{}, fmt.Errorf("create project: %w", err)
	}
	if err := checkOwner(req.Owner); err != nil {
		return Project{}, fmt.Errorf("create project: %w", err)
	}
	slug := Slugify(req.Name)
	if slug == "" {
		return Project{}, fmt.Errorf("create project: name %q has no letters or digits to make a slug from: %w", req.Name, ErrBadInput)
	}
	specs := slices.Clone(req.Containers)
	var conns []Connection
	fromConfig := 0 // specs[:fromConfig] are the nodes of .tesslate/config.json
	if req.FromDir != "" {
		cfg, found, err := readLocalConfig(req.FromDir)
		if err != nil {
			return Project{}, fmt.Errorf("create project %s: %w", slug, err)
		}
		var from []ContainerSpec
		if found {
			from, conns = specsFromConfig(cfg)
			fromConfig = len(from)
		} else if from, err = scanContainers(req.FromDir); err != nil {
			return Project{}, fmt.Errorf("create project %s: %w", slug, err)
		}
		specs = append(from, specs...)
	}
	now := e.now()
	owner := req.Owner
	if owner == "" {
		owner = "local"
	}
	opID := newID()
	p := Project{ID: newID(), Slug: slug, Name: req.Name, Owner: owner, Status: StatusActive,
		LastActivity: now, LastActivitySource: SourceCreate, LastActivityActor: e.cfg.Owner,
		CreatedAt: now, UpdatedAt: now,
		OpID: opID, OpKind: OpCreate, OpOwner: e.cfg.Owner, OpHeartbeat: now, OpEpoch: 1}
	var cs []Container
	for i, s := range specs {
		c, err := containerFrom(p.ID, s, now)
		if err != nil {
			if i < fromConfig {
				err = fmt.Errorf("%s: %w", tesslate.ConfigPath, err)
			}
			return Project{}, fmt.Errorf("create project %s: %w", slug, err)
		}
		if slices.ContainsFunc(cs, func(o Container) bool { return o.Name == c.Name }) {
			return Project{}, fmt.Errorf("create project %s: two containers named %q: %w", slug, c.Name, ErrBadInput)
		}
		if err := e.checkNameRivals(ctx, p, c.Name); err != nil {
			return Project{}, fmt.Errorf("create project %s: %w", slug, err)
		}
		cs = append(cs, c)
	}
	// Storage already there under this name belongs to no project in the store (a store that
	// was deleted or replaced, a removal that did not finish): adopting it would hand someone's
	// old files to the new project. The doctor lists it.
	if cur, err := e.store.GetProject(ctx, slug); err == nil && cur.Status != StatusDeleted {
		return Project{}, fmt.Errorf("create project: slug %q is taken; pick another name or remove that project first: %w", slug, ErrExists)
	}
	if ok, err := e.runtime.ProjectExists(ctx, p); err != nil {
		return Project{}, fmt.Errorf("create project %s: check storage: %w", slug, err)
	} else if ok {
		return Project{}, fmt.Errorf("create project %s: storage for %q already exists and belongs to no project (see sailtui doctor); move it away or pick another name: %w", slug, slug, ErrExists)
	}
	// Refused before anything is made: a create that fails half-way must leave nothing.
	importer, canImport := e.runtime.(TreeImporter)
	if req.FromDir != "" && !canImport {
		return Project{}, fmt.Errorf("create project %s: the %s runtime cannot import a directory; create it empty and copy files in with sailtui files put: %w", slug, e.runtime.Mode(), ErrBadInput)
	}
	// The record goes first, held by this creation: its slug is then ours, and no sweep can
	// touch the project before its files are in.
	if err := e.store.CreateProject(ctx, p, cs, conns); err != nil {
		if errors.Is(err, ErrExists) {
			return Project{}, fmt.Errorf("create project: slug %q is taken; pick another name or remove that project first: %w", slug, ErrExists)
		}
		return Project{}, fmt.Errorf("create project %s: %w", slug, err)
	}
	o := &op{e: e, p: p, hold: HoldOf(p), rec: Operation{ID: opID, ProjectID: p.ID, Kind: OpCreate, Step: "recorded",
		State: OpRunning, Owner: e.cfg.Owner, StartedAt: now, UpdatedAt: now, Epoch: p.OpEpoch}}
	if err := e.store.InsertOp(ctx, o.rec); err != nil {
		return p, fmt.Errorf("create project %s: journal: %w", slug, err)
	}
	o.stopHB = e.heartbeat(ctx, o)
	if err := e.runtime.EnsureProject(ctx, p); err != nil {
		return e.undoCreate(ctx, o, cs, envNotCreated, fmt.Errorf("create project %s: prepare environment: %w", slug, err))
	}
	if err := o.step(ctx, stepEnvironmentMade); err != nil {
		return e.undoCreate(ctx, o, cs, envNotCreated, err)
	}
	if req.FromDir != "" {
		progressFor(ctx, p.ID, OpCreate)(Progress{Phase: "import"})
		if err := importer.ImportTree(ctx, p, req.FromDir); err != nil {
			return e.undoCreate(ctx, o, cs, "import failed: "+err.Error(), fmt.Errorf("create project %s: import %s: %w", slug, req.FromDir, err))
		}
	}
	for i, s := range specs {
		if s.GitURL != "" {
			if err := e.cloneInto(ctx, p, cs[i].Directory, s.GitURL, s.GitBranch); err != nil {
				return e.undoCreate(ctx, o, cs, "template clone failed", fmt.Errorf("create project %s: %w", slug, err))
			}
		}
	}
	done, err := o.finish(ctx, Release{To: StatusActive}, OpDone, nil)
	if err == nil {
		e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, To: StatusActive, Reason: "created"})
	}
	return done, err
}

// undoCreate ends a creation that failed after its record was made: what was made of its
// environment is removed and the project leaves the list (deleted), so the name is free again
// and nothing half-made is left to start over an empty tree. The environment holds nothing of
// the user's that is not still where it came from (the imported directory, the template), so
// no snapshot is owed (invariant 1 guards what only sailtui holds). When the removal fails the
// project stays, failed with reason, for the operator to see.
func (e *Engine) undoCreate(ctx context.Context, o *op, cs []Container, reason string, cause error) (Project, error) {
	ctx = context.WithoutCancel(ctx)
	if err := o.guard(ctx, "remove the half-made environment"); err != nil {
		return o.finish(ctx, Release{To: StatusFailed, Reason: reason}, OpFailed, joinSuperseded(cause, err))
	}
	if err := e.runtime.DestroyProject(ctx, o.p, cs); err != nil {
		return o.finish(ctx, Release{To: StatusFailed, Reason: reason + "; removing what was made failed: " + err.Error()}, OpFailed,
			fmt.Errorf("%w; removing what was made failed too, see sailtui doctor: %v", cause, err))
	}
	p, err := o.finish(ctx, Release{To: StatusDeleted, Reason: "creation failed: " + reason}, OpFailed, cause)
	if errors.Is(err, cause) {
		err = fmt.Errorf("%w; nothing was kept", err)
	}
	return p, err
}

// checkNameRivals refuses a container name of p that the runtime would map to the name of a
// container of another live project (see NameSharer).
func (e *Engine) checkNameRivals(ctx context.Context, p Project, name string) error {
	ns, ok := e.runtime.(NameSharer)
	if !ok {
		return nil
	}
	runtimeName, rivals := ns.NameRivals(p, name)
	slugs := slices.Sorted(maps.Keys(rivals))
	for _, slug := range slugs {
		other, err := e.store.GetProject(ctx, slug)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("check the %s name %s against project %s: %w", e.runtime.Mode(), runtimeName, slug, err)
		}
		if other.ID == p.ID || other.Slug != slug || other.Status == StatusDeleted {
			continue
		}
		cs, err := e.store.ListContainers(ctx, other.ID)
		if err != nil {
			return fmt.Errorf("check the %s name %s against project %s: %w", e.runtime.Mode(), runtimeName, slug, err)
		}
		if slices.ContainsFunc(cs, func(c Container) bool { return c.Name == rivals[slug] }) {
			return fmt.Errorf("container %q would be named %s in %s, the name of container %q of project %s; choose another name: %w",
				name, runtimeName, e.runtime.Mode(), rivals[slug], slug, ErrExists)
		}
	}
	return nil
}

func containerFrom(projectID string, s ContainerSpec, now time.Time) (Container, error) {
	if err := CheckContainerName(s.Name); err != nil {
		return Container{}, err
	}
	dir, err := CleanDir(s.Directory)
	if err != nil {
		return Container{}, err
	}
	if s.Port < 0 || s.Port > 65535 {
		return Container{}, fmt.Errorf("container %s: port %d out of range 1-65535: %w", s.Name, s.Port, ErrBadInput)
	}
	if s.Kind == KindService && strings.TrimSpace(s.Image) == "" {
		return Container{}, fmt.Errorf("service container %s has no image; give it one (e.g. postgres:16): %w", s.Name, ErrBadInput)
	}
	if s.Kind != KindApp && s.Kind != KindService && s.Kind != KindExternal {
		return Container{}, fmt.Errorf("container %s: unknown kind %q (app, service or external): %w", s.Name, s.Kind, ErrBadInput)
	}
	return Container{ProjectID: projectID, Name: s.Name, Directory: dir, Port: s.Port, Command: s.Command,
		Env: s.Env, GitURL: RedactURL(s.GitURL), GitBranch: s.GitBranch, CreatedAt: now,
		Kind: s.Kind, Image: s.Image, DataPath: s.DataPath, Exports: s.Exports, Resources: s.Resources,
		Primary: s.Primary, Endpoint: s.Endpoint}, nil
}

// skipScan are directories never searched for TESSLATE.md: dependencies and VCS data.
var skipScan = map[string]bool{"node_modules": true, ".git": true, "vendor": true, ".venv": true, "__pycache__": true}

// scanContainers finds the directories of src that hold a TESSLATE.md: each is a container
// named after its directory ("app" for the root).
func scanContainers(src string) ([]ContainerSpec, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", src, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: %w", src, ErrBadInput)
	}
	var out []ContainerSpec
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != src && skipScan[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "TESSLATE.md" {
			return nil
		}
		rel, err := filepath.Rel(src, filepath.Dir(p))
		if err != nil {
			return err
		}
		// Read here, where the file is on this machine and nothing is made yet: a file every
		// start would refuse is refused now, naming it and its line, not after the import.
		if err := checkTesslate(p, filepath.ToSlash(filepath.Join(rel, "TESSLATE.md"))); err != nil {
			return err
		}
		name := "app"
		if rel != "." {
			name = Slugify(filepath.Base(rel))
		}
		for n := 2; slices.ContainsFunc(out, func(c ContainerSpec) bool { return c.Name == name }); n++ {
			name = fmt.Sprintf("%s-%d", strings.TrimSuffix(name, fmt.Sprintf("-%d", n-1)), n)
		}
		out = append(out, ContainerSpec{Name: name, Directory: filepath.ToSlash(rel)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan %s for TESSLATE.md: %w", src, err)
	}
	return out, nil
}

// checkTesslate parses the TESSLATE.md at path (shown as name) as every start will.
func checkTesslate(path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	defer f.Close()
	// One byte over the limit is enough for the parser to refuse the size.
	data, err := io.ReadAll(io.LimitReader(f, tesslate.MaxSize+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if _, err := tesslate.Parse(data); err != nil {
		where := name
		var pe *tesslate.ParseError
		if errors.As(err, &pe) && pe.Line > 0 {
			where = fmt.Sprintf("%s line %d", name, pe.Line)
		}
		msg := err.Error()
		if pe != nil {
			msg = pe.Msg
		}
		return fmt.Errorf("%s: %s; fix it and create the project again: %w", where, msg, ErrBadInput)
	}
	return nil
}

func (e *Engine) cloneInto(ctx context.Context, p Project, dir, url, branch string) error {
	g, ok := e.runtime.(GitCloner)
	if !ok {
		return fmt.Errorf("the %s runtime cannot clone templates: %w", e.runtime.Mode(), ErrBadInput)
	}
	if err := g.CloneInto(ctx, p, dir, url, branch); err != nil {
		return fmt.Errorf("clone %s into %s: %s", RedactURL(url), dir, redactIn(err.Error(), url))
	}
	return nil
}

// AddContainer adds a container to a live project, cloning its template when GitURL is set.
func (e *Engine) AddContainer(ctx context.Context, ref string, s ContainerSpec) (Container, error) {
	p, err := e.forWrite(ctx, "add container", ref)
	if err != nil {
		return Container{}, err
	}
	if err := e.inProgress(ctx, "add container to "+p.Slug, p); err != nil && p.Status != StatusActive {
		return Container{}, err
	}
	if p.Status != StatusActive {
		next := "wake it first"
		if p.Status == StatusFailed {
			next = "next: " + NextStep(p)
		}
		return Container{}, fmt.Errorf("add container to %s: project is %s; %s: %w", p.Slug, p.Status, next, ErrBadState)
	}
	c, err := containerFrom(p.ID, s, e.now())
	if err != nil {
		return c, fmt.Errorf("add container to %s: %w", p.Slug, err)
	}
	c.OwnCommand = c.Command != ""
	cs, err := e.store.ListContainers(ctx, p.ID)
	if err != nil {
		return c, fmt.Errorf("add container to %s: %w", p.Slug, err)
	}
	if slices.ContainsFunc(cs, func(o Container) bool { return o.Name == c.Name }) {
		return c, fmt.Errorf("add container to %s: %q exists: %w", p.Slug, c.Name, ErrExists)
	}
	if err := e.checkNameRivals(ctx, p, c.Name); err != nil {
		return c, fmt.Errorf("add container to %s: %w", p.Slug, err)
	}
	if s.GitURL != "" {
		// The clone writes into the project's storage: a use, like any other write (invariant 9).
		err := e.withUse(ctx, p.ID, "git clone", SourceGit, func(ctx context.Context, p Project) error {
			return e.cloneInto(ctx, p, c.Directory, s.GitURL, s.GitBranch)
		})
		if err != nil {
			return c, fmt.Errorf("add container to %s: %w", p.Slug, err)
		}
	} else if err := e.checkContainerDir(ctx, p, c, s.MakeDir); err != nil {
		return c, fmt.Errorf("add container to %s: %w", p.Slug, err)
	}
	if err := e.store.PutContainer(ctx, c); err != nil {
		return c, fmt.Errorf("add container to %s: %w", p.Slug, err)
	}
	e.touch(ctx, p, SourceContainer)
	e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, Kind: "container", Reason: "added " + c.Name})
	return c, nil
}

// checkContainerDir refuses a container directory that is not a directory of the project
// tree: its container would only fail at start. With mk a missing one is made.
func (e *Engine) checkContainerDir(ctx context.Context, p Project, c Container, mk bool) error {
	if c.Directory == "." {
		return nil
	}
	if rf, ok := e.runtime.(RemoteFiles); ok && rf.FilesNeedProcess() && !mk {
		// Looking would be an exec into a pod (kubernetes): adding a container, like starting
		// one with a command of its own, does not depend on one answering.
		return nil
	}
	return e.withUse(ctx, p.ID, "container add", SourceContainer, func(ctx context.Context, p Project) error {
		_, err := e.runtime.ListFiles(ctx, p, c.Directory)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrNotFound) && mk:
			if err := e.runtime.WriteFile(ctx, p, c.Directory+"/.gitkeep", strings.NewReader("")); err != nil {
				return fmt.Errorf("make directory %s: %w", c.Directory, err)
			}
			return nil
		case errors.Is(err, ErrNotFound):
			return fmt.Errorf("directory %q does not exist in project %s; put its files there first (sailtui files put %s %s/FILE), "+
				"or pass --mkdir to make it empty: %w", c.Directory, p.Slug, p.Slug, c.Directory, ErrBadInput)
		}
		return fmt.Errorf("a container's directory must be a directory of the project: %w", err)
	})
}

// RemoveContainer stops a container and forgets it (its files stay in the project).
func (e *Engine) RemoveContainer(ctx context.Context, ref, name string) error {
	if err := e.writable("remove container"); err != nil {
		return err
	}
	p, c, err := e.container(ctx, ref, name)
	if err != nil {
		return err
	}
	if p.Status == StatusActive && c.Runs() {
		if err := e.runtime.StopContainer(ctx, p, c); err != nil {
			return fmt.Errorf("remove container %s/%s: stop: %w", p.Slug, name, err)
		}
	}
	if err := e.store.DeleteContainer(ctx, p.ID, name); err != nil {
		return fmt.Errorf("remove container %s/%s: %w", p.Slug, name, err)
	}
	e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, Kind: "container", Reason: "removed " + name})
	return nil
}

// Connect records that container from depends on container to: to starts first, and from
// gets to's resolved exports in its environment from its next start (a running from keeps the
// environment it started with). Both must be containers of the project, from one that runs here
// (an external service gets no environment), not the same one, and not connected already; each
// refusal wraps ErrBadInput and says what to do.
func (e *Engine) Connect(ctx context.Context, ref, from, to string) error {
	if err := e.writable("connect"); err != nil {
		return err
	}
	p, fc, err := e.container(ctx, ref, from)
	if err != nil {
		return fmt.Errorf("connect %s to %s: %w (sailtui container add adds one): %w", from, to, err, ErrBadInput)
	}
	if _, _, err := e.container(ctx, ref, to); err != nil {
		return fmt.Errorf("connect %s to %s: %w (sailtui container add adds one): %w", from, to, err, ErrBadInput)
	}
	if from == to {
		return fmt.Errorf("connect %s to itself: a connection joins two containers; name the one %s depends on: %w", from, from, ErrBadInput)
	}
	if !fc.Runs() {
		return fmt.Errorf("connect %s to %s: %s is an external service, which runs elsewhere and gets no environment from sailtui; connect the app that uses it instead (sailtui connect %s APP %s): %w",
			from, to, from, p.Slug, from, ErrBadInput)
	}
	conns, err := e.store.ListConnections(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("connect %s to %s: list connections of %s: %w", from, to, p.Slug, err)
	}
	if slices.ContainsFunc(conns, func(cn Connection) bool { return cn.From == from && cn.To == to }) {
		return fmt.Errorf("connect %s to %s: already connected in %s (sailtui containers ls %s shows the connections): %w", from, to, p.Slug, p.Slug, ErrBadInput)
	}
	if err := e.store.PutConnection(ctx, Connection{ProjectID: p.ID, From: from, To: to}); err != nil {
		return fmt.Errorf("connect %s to %s: %w", from, to, err)
	}
	e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, Kind: "container", Reason: "connected " + from + " to " + to})
	return nil
}

// Disconnect removes the connection from -> to: to's exports leave from's environment at
// its next start. A connection that is not there is refused with ErrBadInput, naming the ones
// from has.
func (e *Engine) Disconnect(ctx context.Context, ref, from, to string) error {
	if err := e.writable("disconnect"); err != nil {
		return err
	}
	p, err := e.liveProject(ctx, ref)
	if err != nil {
		return err
	}
	conns, err := e.store.ListConnections(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("disconnect %s from %s: list connections of %s: %w", from, to, p.Slug, err)
	}
	if !slices.ContainsFunc(conns, func(cn Connection) bool { return cn.From == from && cn.To == to }) {
		var has []string
		for _, cn := range conns {
			if cn.From == from {
				has = append(has, cn.To)
			}
		}
		what := "none"
		if len(has) > 0 {
			what = strings.Join(has, ", ")
		}
		return fmt.Errorf("disconnect %s from %s: %s is not connected to %s in %s (it is connected to: %s): %w", from, to, from, to, p.Slug, what, ErrBadInput)
	}
	if e.declaredInConfig(ctx, p, from, to) {
		return fmt.Errorf("disconnect %s from %s: %s declares this connection, and every start of %s reads it again and would bring it back; "+
			"take it out of the file's \"connections\" (sailtui files get %s %s, edit, files put): %w",
			from, to, tesslate.ConfigPath, p.Slug, p.Slug, tesslate.ConfigPath, ErrBadInput)
	}
	if err := e.store.DeleteConnection(ctx, Connection{ProjectID: p.ID, From: from, To: to}); err != nil {
		return fmt.Errorf("disconnect %s from %s: %w", from, to, err)
	}
	e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, Kind: "container", Reason: "disconnected " + from + " from " + to})
	return nil
}

// declaredInConfig says whether the project's .tesslate/config.json, as it is now, declares
// the connection from -> to (syncConfig puts it back at every start). A file that cannot be
// read or parsed now declares nothing: the start that reads it will say what is wrong.
func (e *Engine) declaredInConfig(ctx context.Context, p Project, from, to string) bool {
	if fr, ok := e.runtime.(FilesReadier); ok && !fr.FilesReady(ctx, p) {
		return false
	}
	var buf bytes.Buffer
	if err := e.runtime.ReadFile(ctx, p, tesslate.ConfigPath, &buf); err != nil {
		return false
	}
	cfg, err := tesslate.ParseConfig(buf.Bytes())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(cfg.Connections, func(cn tesslate.Connection) bool { return cn.From == from && cn.To == to })
}

// Connections are the connections of a project, in the order they were made.
func (e *Engine) Connections(ctx context.Context, ref string) ([]Connection, error) {
	p, err := e.Project(ctx, ref)
	if err != nil {
		return nil, err
	}
	conns, err := e.store.ListConnections(ctx, p.ID)
	if err != nil {
		return nil, fmt.Errorf("list connections of %s: %w", p.Slug, err)
	}
	return conns, nil
}

// container finds one container of a live project.
func (e *Engine) container(ctx context.Context, ref, name string) (Project, Container, error) {
	p, err := e.liveProject(ctx, ref)
	if err != nil {
		return p, Container{}, err
	}
	cs, err := e.store.ListContainers(ctx, p.ID)
	if err != nil {
		return p, Container{}, fmt.Errorf("list containers of %s: %w", p.Slug, err)
	}
	for _, c := range cs {
		if c.Name == name {
			return p, c, nil
		}
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return p, Container{}, fmt.Errorf("project %s has no container %q (it has: %s): %w", p.Slug, name, strings.Join(names, ", "), ErrNotFound)
}

// DeleteProject removes a project. Its storage is snapshotted first (invariant 1) and every
// snapshot is soft-deleted: kept for the retention period, then purged.
func (e *Engine) DeleteProject(ctx context.Context, ref string) (Project, error) {
	p, err := e.forWrite(ctx, "delete project", ref)
	if err != nil {
		return p, err
	}
	o, err := e.claim(ctx, p, OpDelete, []ProjectStatus{StatusActive, StatusHibernated, StatusFailed}, p.Status, Claim{})
	if err != nil {
		return p, err
	}
	return e.deleteClaimed(ctx, o)
}

func (e *Engine) deleteClaimed(ctx context.Context, o *op) (Project, error) {
	p := o.p
	cs, err := e.runningContainers(ctx, p.ID)
	if err != nil {
		return o.finish(ctx, Release{To: p.Status}, OpFailed, fmt.Errorf("delete %s: %w", p.Slug, err))
	}
	live, err := e.runtime.ProjectExists(ctx, p)
	if err != nil {
		return o.finish(ctx, Release{To: p.Status}, OpFailed, fmt.Errorf("delete %s: check storage: %w", p.Slug, err))
	}
	if live {
		if err := o.guard(ctx, "stop the containers"); err != nil {
			return o.finish(ctx, Release{To: p.Status}, OpFailed, err)
		}
		if err := e.runtime.StopProject(ctx, p, cs); err != nil {
			return o.finish(ctx, Release{To: p.Status}, OpFailed, fmt.Errorf("delete %s: stop containers: %w", p.Slug, err))
		}
		if o.rec.SnapshotID == "" {
			o.rec.SnapshotID = snapshotID(SnapshotHibernation, o.rec.ID, o.rec.StartedAt)
		}
		if _, err := o.takeSnapshot(ctx, o.rec.SnapshotID, SnapshotHibernation, "before delete"); err != nil {
			return o.finish(ctx, Release{To: p.Status}, OpFailed, fmt.Errorf("delete %s: final snapshot: %w", p.Slug, err))
		}
		if err := o.guard(ctx, "tear down"); err != nil {
			return o.finish(ctx, Release{To: p.Status}, OpFailed, err)
		}
		if err := e.runtime.DestroyProject(ctx, p, cs); err != nil {
			return o.finish(ctx, Release{To: StatusFailed, Reason: "teardown failed during delete"}, OpFailed, fmt.Errorf("delete %s: teardown: %w", p.Slug, err))
		}
		if err := o.step(ctx, "torn-down"); err != nil {
			return o.p, err
		}
	}
	if err := o.guard(ctx, "drop the logs"); err != nil {
		return o.finish(ctx, Release{To: p.Status}, OpFailed, err)
	}
	e.dropLogs(ctx, p)
	snaps, err := e.store.ListSnapshots(ctx, SnapshotFilter{ProjectID: p.ID})
	if err != nil {
		return o.finish(ctx, Release{To: StatusFailed, Reason: "could not retire snapshots"}, OpFailed, fmt.Errorf("delete %s: %w", p.Slug, err))
	}
	now := e.now()
	for _, s := range snaps {
		s.Status, s.DeletedAt = SnapshotDeleted, now
		if err := e.store.UpdateSnapshot(ctx, s, o.hold); err != nil {
			o.noteLost(err)
			return o.finish(ctx, Release{To: StatusFailed, Reason: "could not retire snapshots"}, OpFailed, fmt.Errorf("delete %s: retire snapshot %s: %w", p.Slug, s.ID, err))
		}
	}
	return o.finish(ctx, Release{To: StatusDeleted, SetHibernationSnapshot: true}, OpDone, nil)
}
