package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sailtui/sailtui/engine/tesslate"
)

// StartSpecFor resolves what a container runs with the one TESSLATE.md parser: its own command
// wins, then the file's Development Server block, then the default command; the port is the
// file's explicit port, else inferred from its framework, else the container's, else 3000.
func (e *Engine) StartSpecFor(ctx context.Context, p Project, c Container) (StartSpec, error) {
	g, err := e.loadGraph(ctx, p)
	if err != nil {
		return StartSpec{}, err
	}
	return e.startSpec(ctx, p, c, g)
}

// graph is a project's containers (external ones included: their exports count) and
// connections, read once for every start of a project's containers.
type graph struct {
	cs    []Container
	conns []Connection
}

func (e *Engine) loadGraph(ctx context.Context, p Project) (graph, error) {
	cs, err := e.store.ListContainers(ctx, p.ID)
	if err != nil {
		return graph{}, fmt.Errorf("list containers of %s: %w", p.Slug, err)
	}
	conns, err := e.store.ListConnections(ctx, p.ID)
	if err != nil {
		return graph{}, fmt.Errorf("list connections of %s: %w", p.Slug, err)
	}
	return graph{cs: cs, conns: conns}, nil
}

// startSpec is StartSpecFor over a graph already read.
func (e *Engine) startSpec(ctx context.Context, p Project, c Container, g graph) (StartSpec, error) {
	cs, conns := g.cs, g.conns
	var err error
	env := e.injectedEnv(p, c, cs, conns, true)
	maps.Copy(env, map[string]string{"PROJECT_ID": p.ID, "PROJECT_SLUG": p.Slug, "CONTAINER_NAME": c.Name})
	maps.Copy(env, c.Env) // its own env wins: it is what a person wrote for this container
	var deps []string
	for _, cn := range conns {
		if cn.From == c.Name && slices.ContainsFunc(cs, func(o Container) bool { return o.Name == cn.To && o.Runs() }) {
			deps = append(deps, cn.To)
		}
	}
	slices.Sort(deps)
	if c.IsService() {
		// A service runs its image's own command unless it has one; it has no TESSLATE.md.
		return StartSpec{Command: c.Command, Port: portOf(c), Env: env, DependsOn: deps, declaredPort: c.Port > 0}, nil
	}
	var buf bytes.Buffer
	var spec tesslate.Spec
	if rf, ok := e.runtime.(RemoteFiles); ok && rf.FilesNeedProcess() && c.Command != "" {
		err = ErrNotFound // nothing to read: the container says what it runs
	} else {
		err = e.runtime.ReadFile(ctx, p, path.Join(c.Directory, "TESSLATE.md"), &buf)
	}
	switch {
	case err == nil:
		spec, err = tesslate.Parse(buf.Bytes())
		if err != nil {
			return StartSpec{}, fmt.Errorf("%s/%s: %w", c.Directory, "TESSLATE.md", err)
		}
	case errors.Is(err, ErrNotFound):
	default:
		return StartSpec{}, fmt.Errorf("read %s/TESSLATE.md: %w", c.Directory, err)
	}
	if err := spec.CheckPort(c.Port); err != nil {
		return StartSpec{}, fmt.Errorf("%s/%s: %w (or give the container a port: sailtui container add --port)", c.Directory, "TESSLATE.md", err)
	} else if spec.PortProblem != nil {
		e.log.Warn("TESSLATE.md's **Port** is not a number; the container's own port is used", "project", p.Slug,
			"container", c.Name, "problem", spec.PortProblem.Error())
	}
	cmd := c.Command
	if cmd == "" {
		cmd = spec.StartupCommand
	}
	if cmd == "" {
		cmd = e.cfg.DefaultCommand
	}
	if cmd == "" {
		return StartSpec{}, fmt.Errorf("container %s has no command: give it one (--command) or a TESSLATE.md with a Development Server block: %w", c.Name, ErrBadInput)
	}
	if !e.cfg.SkipInstallDeps {
		cmd = WithDependencyInstall(cmd)
	}
	declared := c.Port > 0 || (spec.PortExplicit && spec.ResolvePort(0) == spec.Port) || spec.InferredPort() > 0
	return StartSpec{Command: cmd, Port: spec.ResolvePort(c.Port), Env: env, DependsOn: deps, declaredPort: declared}, nil
}

// startContainer starts c of p; g is the project's graph when the caller has read it already
// (nil: read here). It returns the spec it started c with; it does not wait for c to come up
// (awaitUp does).
func (e *Engine) startContainer(ctx context.Context, p Project, c Container, g *graph) (ContainerStatus, StartSpec, error) {
	if g == nil {
		loaded, err := e.loadGraph(ctx, p)
		if err != nil {
			return ContainerStatus{}, StartSpec{}, fmt.Errorf("start %s/%s: %w", p.Slug, c.Name, err)
		}
		g = &loaded
	}
	spec, err := e.startSpec(ctx, p, c, *g)
	if err != nil {
		return ContainerStatus{}, spec, fmt.Errorf("start %s/%s: %w", p.Slug, c.Name, err)
	}
	st, err := e.runtime.StartContainer(ctx, p, c, spec)
	if err != nil {
		// Runtimes name what they were starting already; said twice it only reads as noise.
		if prefix := fmt.Sprintf("start %s/%s: ", p.Slug, c.Name); !strings.HasPrefix(err.Error(), prefix) {
			err = fmt.Errorf("%s%w", prefix, err)
		}
		return st, spec, err
	}
	return st, spec, nil
}

// sameFailure is one cause that failed several containers of a project alike (an image that
// does not exist, a daemon that is down): said once, naming them all.
type sameFailure struct {
	msg string
	err error
}

func (s sameFailure) Error() string { return s.msg }
func (s sameFailure) Unwrap() error { return s.err }

// joinStartErrors joins the start failures of p's containers, each cause once: failures whose
// message is the same but for the container they name are reported together.
func joinStartErrors(p Project, names []string, errs []error) error {
	var order []string
	groups := map[string][]int{}
	for i, err := range errs {
		cause, ok := strings.CutPrefix(err.Error(), fmt.Sprintf("start %s/%s: ", p.Slug, names[i]))
		if !ok {
			cause = "\x00" + err.Error() // not of the usual shape: kept apart
		}
		if _, seen := groups[cause]; !seen {
			order = append(order, cause)
		}
		groups[cause] = append(groups[cause], i)
	}
	out := make([]error, 0, len(order))
	for _, cause := range order {
		idx := groups[cause]
		if len(idx) == 1 {
			out = append(out, errs[idx[0]])
			continue
		}
		who := make([]string, len(idx))
		for j, i := range idx {
			who[j] = p.Slug + "/" + names[i]
		}
		out = append(out, sameFailure{msg: "start " + strings.Join(who, ", ") + ": " + cause, err: errs[idx[0]]})
	}
	return errors.Join(out...)
}

// startOrder puts every container after the ones it depends on; cycles fall back to name order.
func startOrder(cs []Container, conns []Connection) []Container {
	deps := map[string][]string{}
	for _, c := range conns {
		deps[c.From] = append(deps[c.From], c.To)
	}
	rest := slices.Clone(cs)
	slices.SortFunc(rest, func(a, b Container) int { return compareStrings(a.Name, b.Name) })
	var out []Container
	placed := map[string]bool{}
	for len(rest) > 0 {
		progress := false
		for i := 0; i < len(rest); i++ {
			ready := true
			for _, d := range deps[rest[i].Name] {
				if !placed[d] && slices.ContainsFunc(rest, func(c Container) bool { return c.Name == d }) {
					ready = false
				}
			}
			if ready {
				placed[rest[i].Name] = true
				out = append(out, rest[i])
				rest = slices.Delete(rest, i, i+1)
				i--
				progress = true
			}
		}
		if !progress {
			out = append(out, rest...)
			break
		}
	}
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// startAll starts every container of p in dependency order, going on past failures, and waits
// until every one is up (awaitUp). A container starts once those it depends on are up; one
// whose dependency failed to start, did not come up or was itself not started is not started,
// in every runtime alike: the runtimes differ in when a failure shows (docker's at create,
// kubernetes' at readiness), and the rule must not.
func (e *Engine) startAll(ctx context.Context, p Project) error {
	if err := e.syncConfig(ctx, p); err != nil {
		return fmt.Errorf("start %s: %w", p.Slug, err)
	}
	g, err := e.loadGraph(ctx, p)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.Slug, err)
	}
	cs := Running(g.cs)
	if err := e.checkRunnable(p, cs); err != nil {
		return err
	}
	var errs []error
	var names []string
	var wg sync.WaitGroup
	defer wg.Wait()
	waits := map[string]*startWait{}
	down := map[string]string{} // container not started or failed to start -> what happened, said of it
	var ws []*startWait
	for _, c := range startOrder(cs, g.conns) {
		if dep, what := failedDependency(p, c, g.conns, waits, down); dep != "" {
			errs = append(errs, fmt.Errorf("start %s/%s: not started: it depends on %s, which %s: %w", p.Slug, c.Name, dep, what, ErrNotUp))
			names = append(names, c.Name)
			down[c.Name] = "was not started (it depends on " + dep + ")"
			continue
		}
		_, spec, err := e.startContainer(ctx, p, c, &g)
		if err != nil {
			errs = append(errs, err)
			names = append(names, c.Name)
			down[c.Name] = "failed to start (" + failureHead(p, c.Name, err) + ")"
			continue
		}
		w := e.waitFor(ctx, &wg, p, c, spec.listenPort())
		waits[c.Name] = w
		ws = append(ws, w)
	}
	return errors.Join(joinStartErrors(p, names, errs), awaitAll(p, ws))
}

// failedDependency names the first container c depends on that is not up, with what happened
// to it ("" when all are up): one that failed to start or was not started (down), or one being
// waited for that did not come up, which it waits for.
func failedDependency(p Project, c Container, conns []Connection, waits map[string]*startWait, down map[string]string) (string, string) {
	for _, cn := range conns {
		if cn.From != c.Name {
			continue
		}
		if what, ok := down[cn.To]; ok {
			return cn.To, what
		}
		if w, ok := waits[cn.To]; ok {
			if <-w.done; w.err != nil {
				return cn.To, "did not come up (" + failureHead(p, cn.To, w.err) + ")"
			}
		}
	}
	return "", ""
}

// failureHead is the gist of the start failure err of p's container name: its first line
// without the "start slug/name: " the whole error says already, nor the log lines after it.
func failureHead(p Project, name string, err error) string {
	head, _, _ := strings.Cut(err.Error(), "\n")
	head = strings.TrimPrefix(head, fmt.Sprintf("start %s/%s: ", p.Slug, name))
	head, _, _ = strings.Cut(head, "; its last log lines:")
	return head
}

// StartProject starts every container; a hibernated project is woken (restored) first.
// Starting counts as activity.
func (e *Engine) StartProject(ctx context.Context, ref string) (Project, error) {
	p, err := e.forWrite(ctx, "start", ref)
	if err != nil {
		return p, err
	}
	if p.Status == StatusHibernated || (p.Status == StatusFailed && p.HibernationSnapshot != "") {
		return e.Wake(ctx, p.ID)
	}
	o, err := e.claim(ctx, p, OpStart, []ProjectStatus{StatusActive, StatusFailed}, StatusActive, Claim{})
	if err != nil {
		return p, err
	}
	e.touch(ctx, p, SourceStart)
	if lost, err := e.ensureEnvironment(ctx, o); err != nil {
		// A project without its storage is not active, whatever it was; one whose environment
		// could not be made stays as it was (failed after a failed create, or active).
		to, reason := p.Status, p.StatusReason
		if lost {
			to, reason = StatusFailed, err.Error()
		}
		return o.finish(ctx, Release{To: to, Reason: reason}, OpFailed, err)
	}
	progressFor(ctx, p.ID, OpStart)(Progress{Phase: "start"})
	err = e.startAll(ctx, o.p)
	// A start that failed leaves the project active (its storage is live: its files can be
	// fixed, and the sweep hibernates it when idle), with the failure as its reason, which
	// the next start that succeeds clears.
	return o.finish(ctx, Release{To: StatusActive, Reason: startFailedReason(err)}, OpDone, err)
}

// stepEnvironmentMade is journaled (by a create or a start) once the project's environment and
// storage exist: from then on, storage that is missing was lost, not never made.
const stepEnvironmentMade = "environment-made"

// ensureEnvironment makes sure the environment of p (held by o) is there before its containers
// start: what the runtime keeps of it (kubernetes: namespace, NetworkPolicy, PVC, file manager;
// docker: directory or volume, network) is created where missing. Storage is created only for a
// project that never had it (its creation failed part way): storage that was there and is gone
// (removed outside sailtui) is not replaced by an empty one, which would pass a project without
// its files off as started; lost is then true and the error names the snapshot to restore.
func (e *Engine) ensureEnvironment(ctx context.Context, o *op) (lost bool, err error) {
	p := o.p
	exists, err := e.runtime.ProjectExists(ctx, p)
	if err != nil {
		return false, fmt.Errorf("start %s: check its storage: %w", p.Slug, err)
	}
	if !exists {
		made, err := e.environmentMade(ctx, p.ID)
		if err != nil {
			return false, fmt.Errorf("start %s: %w", p.Slug, err)
		}
		if made {
			return true, e.storageGone(ctx, p)
		}
	}
	progressFor(ctx, p.ID, OpStart)(Progress{Phase: "environment"})
	if err := e.runtime.EnsureProject(ctx, p); err != nil {
		return false, fmt.Errorf("start %s: prepare environment: %w", p.Slug, err)
	}
	if !exists {
		if err := o.step(ctx, stepEnvironmentMade); err != nil {
			return false, err
		}
	}
	return false, nil
}

// environmentMade reports whether the project's environment was ever made, from the journal:
// a create or start reached stepEnvironmentMade, or an operation that needs storage (a create
// journaled before that step existed, a wake, a restore, a snapshot, a hibernation) finished.
func (e *Engine) environmentMade(ctx context.Context, projectID string) (bool, error) {
	ops, err := e.store.ListOps(ctx, projectID, 0)
	if err != nil {
		return false, fmt.Errorf("read the journal: %w", err)
	}
	for _, o := range ops {
		if o.Step == stepEnvironmentMade {
			return true, nil
		}
		switch o.Kind {
		case OpCreate, OpWake, OpRestore, OpSnapshot, OpHibernate:
			if o.State == OpDone {
				return true, nil
			}
		}
	}
	return false, nil
}

// storageGone is the error of a project whose storage was lost: what to restore it from.
func (e *Engine) storageGone(ctx context.Context, p Project) error {
	snap, err := e.newestRestorable(ctx, p)
	if err != nil {
		return fmt.Errorf("start %s: its storage is gone (removed outside sailtui); list its snapshots: %w", p.Slug, err)
	}
	if snap == nil {
		return fmt.Errorf("start %s: its storage is gone (removed outside sailtui) and it has no ready snapshot to restore from: recreate its files, or remove it (sailtui project rm %s --yes): %w",
			p.Slug, p.Slug, ErrBadState)
	}
	return fmt.Errorf("start %s: its storage is gone (removed outside sailtui); its newest ready snapshot is %s (%s, %s): sailtui doctor --fix points the project at it, then sailtui project wake %s restores it: %w",
		p.Slug, snap.ID, snap.Type, snap.CreatedAt.Format(time.RFC3339), p.Slug, ErrBadState)
}

// StopProject stops every container; files stay and the project stays active.
func (e *Engine) StopProject(ctx context.Context, ref string) (Project, error) {
	p, err := e.forWrite(ctx, "stop", ref)
	if err != nil {
		return p, err
	}
	if p.Status == StatusHibernated {
		return p, nil
	}
	o, err := e.claim(ctx, p, OpStop, []ProjectStatus{StatusActive, StatusFailed}, p.Status, Claim{})
	if err != nil {
		return p, err
	}
	cs, err := e.runningContainers(ctx, p.ID)
	if err == nil {
		err = e.runtime.StopProject(ctx, p, cs)
	}
	if err != nil {
		err = fmt.Errorf("stop %s: %w", p.Slug, err)
	}
	return o.finish(ctx, Release{To: p.Status}, OpDone, err)
}

// StartContainer starts one container of an active project.
func (e *Engine) StartContainer(ctx context.Context, ref, name string) (ContainerStatus, error) {
	if err := e.writable("start container"); err != nil {
		return ContainerStatus{}, err
	}
	p, c, err := e.container(ctx, ref, name)
	if err != nil {
		return ContainerStatus{}, err
	}
	if !c.Runs() {
		return ContainerStatus{}, fmt.Errorf("start %s/%s: an external service runs elsewhere; nothing of it runs here: %w", p.Slug, name, ErrBadInput)
	}
	if err := e.checkRunnable(p, []Container{c}); err != nil {
		return ContainerStatus{}, err
	}
	if p.Status == StatusHibernated {
		if p, err = e.Wake(ctx, p.ID); err != nil {
			return ContainerStatus{}, err
		}
	}
	o, err := e.claim(ctx, p, OpStart, []ProjectStatus{StatusActive}, StatusActive, Claim{})
	if err != nil {
		return ContainerStatus{}, err
	}
	e.touch(ctx, p, SourceStart)
	st, spec, err := e.startContainer(ctx, p, c, nil)
	if err == nil {
		if err = e.awaitUp(ctx, p, c, spec.listenPort()); err == nil {
			if now, serr := e.runtime.ContainerStatus(ctx, p, c); serr == nil {
				st = now
			}
		}
	}
	_, err = o.finish(ctx, Release{To: StatusActive, Reason: startFailedReason(err)}, OpDone, err)
	e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, Kind: "container", Reason: "started " + name})
	return st, err
}

// StopContainer stops one container.
func (e *Engine) StopContainer(ctx context.Context, ref, name string) error {
	if err := e.writable("stop container"); err != nil {
		return err
	}
	p, c, err := e.container(ctx, ref, name)
	if err != nil {
		return err
	}
	if p.Status != StatusActive || !c.Runs() {
		return nil
	}
	o, err := e.claim(ctx, p, OpStop, []ProjectStatus{StatusActive}, StatusActive, Claim{})
	if err != nil {
		return err
	}
	err = e.runtime.StopContainer(ctx, p, c)
	if err != nil {
		err = fmt.Errorf("stop %s/%s: %w", p.Slug, name, err)
	}
	_, err = o.finish(ctx, Release{To: StatusActive}, OpDone, err)
	e.publish(ctx, Event{ProjectID: p.ID, Slug: p.Slug, Kind: "container", Reason: "stopped " + name})
	return err
}

// ContainerView is a container with what its runtime says about it.
type ContainerView struct {
	Container
	Status ContainerStatus `json:"-"`
}

// Containers lists a project's containers with their runtime status.
func (e *Engine) Containers(ctx context.Context, ref string) (Project, []ContainerView, error) {
	p, err := e.Project(ctx, ref)
	if err != nil {
		return p, nil, err
	}
	cs, err := e.store.ListContainers(ctx, p.ID)
	if err != nil {
		return p, nil, fmt.Errorf("list containers of %s: %w", p.Slug, err)
	}
	out := make([]ContainerView, len(cs))
	for i, c := range cs {
		out[i].Container = c
		if !c.Runs() {
			// Nothing of it runs here; it is listed for its exports.
			out[i].Status = ContainerStatus{Name: c.Name, State: ContainerExternal, Detail: c.Endpoint}
			continue
		}
		if p.Status != StatusActive && p.Status != StatusRestoring {
			out[i].Status = ContainerStatus{Name: c.Name, State: ContainerStopped, Detail: string(p.Status)}
			continue
		}
		st, err := e.runtime.ContainerStatus(ctx, p, c)
		if err != nil {
			st = ContainerStatus{Name: c.Name, State: ContainerUnknown, Detail: err.Error()}
		}
		out[i].Status = st
	}
	return p, out, nil
}

// ProbeContainers is Containers with whether each running container accepts connections on
// its port now (ContainerStatus.PortAnswers), for the views that show a URL as live: the
// probes cost a connection each, which the other readers of Containers need not pay.
func (e *Engine) ProbeContainers(ctx context.Context, ref string) (Project, []ContainerView, error) {
	p, out, err := e.Containers(ctx, ref)
	if err == nil {
		e.probePorts(ctx, p, out)
	}
	return p, out, err
}

// probePorts looks, all at once, whether each running container of vs accepts connections on
// its port, when the runtime can tell (PortProber).
func (e *Engine) probePorts(ctx context.Context, p Project, vs []ContainerView) {
	prober, ok := e.runtime.(PortProber)
	if !ok {
		return
	}
	var wg sync.WaitGroup
	for i := range vs {
		if vs[i].Status.State != ContainerRunning {
			continue
		}
		wg.Go(func() {
			answers, err := e.probe(ctx, prober, p, vs[i].Container, vs[i].Status)
			if err == nil {
				vs[i].Status.PortAnswers = &answers
			}
		})
	}
	wg.Wait()
}
