package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Environment is something a runtime holds for a project: a directory, a network, a namespace.
type Environment struct {
	// Slug is the project it belongs to, by the name the runtime gave it.
	Slug string `json:"slug"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	// ProjectID, when the runtime names environments by project id (kubernetes), is used
	// instead of Slug to match them with projects.
	ProjectID string `json:"project_id,omitempty"`
	// Remove is the command that removes it, for the operator to run once it is known unwanted.
	Remove string `json:"remove,omitempty"`
	// TerminatingSince is set while its deletion has not finished; Blocked says what holds it
	// (the finalizers, the content left).
	TerminatingSince time.Time `json:"terminating_since,omitzero"`
	Blocked          string    `json:"blocked,omitempty"`
}

// stuckTeardownAfter is how long an environment may take to go before the doctor calls its
// deletion stuck: a namespace with pods normally goes in well under a minute.
const stuckTeardownAfter = 2 * time.Minute

// Inventory is offered by runtimes that can list the environments they hold, so the doctor
// can find those of no project.
type Inventory interface {
	Environments(ctx context.Context) ([]Environment, error)
}

// ContainerInventory is offered by runtimes whose containers, once removed outside sailtui,
// stay gone (docker: a container removed by hand; a pod's Deployment makes it again), so the
// doctor can report the containers of active projects that should run and are missing.
type ContainerInventory interface {
	// MissingContainers lists the containers the runtime started and did not stop whose
	// runtime object is gone.
	MissingContainers(ctx context.Context) ([]MissingContainer, error)
}

// MissingContainer is a container its runtime started and finds gone.
type MissingContainer struct {
	ProjectID string
	// Slug is the project's slug when it was started; Container its name in the project,
	// Name the runtime's own name for it.
	Slug      string
	Container string
	Name      string
	StartedAt time.Time
}

// ArchiveInventory is offered by Volumes that keep snapshots as objects, so the doctor can
// find objects of no snapshot and snapshots whose object is gone.
type ArchiveInventory interface {
	// Archives lists the snapshot objects (temporary ones excluded).
	Archives(ctx context.Context) ([]ObjectInfo, error)
	// ArchiveKey is where snapshot s is kept (or would be).
	ArchiveKey(s Snapshot) (string, error)
}

// SetupChecker is offered by runtimes that can tell whether the setup they run in serves
// projects as configured (kubernetes: the Ingress class exists), for the doctor.
type SetupChecker interface {
	CheckSetup(ctx context.Context) []Finding
}

// Reaper is offered by runtimes that delete torn-down trees in the background, once moved
// into a trash area (after the snapshot that holds them was verified: invariant 1).
type Reaper interface {
	// WaitReaped returns once the background delete is done, or ctx ends.
	WaitReaped(ctx context.Context) error
	// TrashLeft lists what waits in the trash.
	TrashLeft() ([]TrashItem, error)
	// EmptyTrash deletes what is in the trash now.
	EmptyTrash(ctx context.Context) error
}

// TrashItem is a torn-down tree waiting to be deleted.
type TrashItem struct {
	Path string `json:"path"`
	// Since is when it was moved to the trash.
	Since time.Time `json:"since"`
}

// trashLeftAfter is how long a tree may wait in the trash before the doctor reports it: the
// background delete of a large tree takes seconds, so one older than this was left by a run
// that ended first.
const trashLeftAfter = 10 * time.Minute

// Finding is one thing the doctor found wrong.
type Finding struct {
	Check   string `json:"check"`
	Project string `json:"project,omitempty"`
	Detail  string `json:"detail"`
	// Fix is what sets it right: a command, or what --fix does.
	Fix string `json:"fix"`
	// Fixable findings are set right by Doctor(fix=true); Fixed says it was done.
	Fixable bool   `json:"fixable"`
	Fixed   bool   `json:"fixed"`
	Error   string `json:"error,omitempty"`
}

// DoctorReport is what the doctor found; Unsupported lists the checks this runtime or these
// volumes cannot make.
type DoctorReport struct {
	Findings    []Finding `json:"findings"`
	Unsupported []string  `json:"unsupported,omitempty"`
}

// OK is true when nothing is left to set right.
func (r DoctorReport) OK() bool {
	return !slices.ContainsFunc(r.Findings, func(f Finding) bool { return !f.Fixed })
}

// Doctor checks the store against the runtime and the object store: operations stuck past
// their timeout, active projects whose storage is gone, environments of no project, archive
// objects of no snapshot and ready snapshots whose object is gone. With fix it applies the safe
// fixes: it finishes stuck operations, and points an active project without storage at its
// newest ready hibernation snapshot (so a wake restores it). Nothing is ever deleted.
func (e *Engine) Doctor(ctx context.Context, fix bool) (DoctorReport, error) {
	if fix {
		if err := e.writable("doctor --fix"); err != nil {
			return DoctorReport{}, err
		}
	}
	rep := DoctorReport{Findings: []Finding{}}
	ps, err := e.store.ListProjects(ctx, ProjectFilter{IncludeDeleted: true})
	if err != nil {
		return rep, fmt.Errorf("doctor: list projects: %w", err)
	}
	live, liveIDs := map[string]Project{}, map[string]Project{}
	for _, p := range ps {
		if p.Status != StatusDeleted {
			live[p.Slug], liveIDs[p.ID] = p, p
		}
	}
	for _, p := range live {
		if f, ok := e.checkStuck(ctx, p, fix); ok {
			rep.Findings = append(rep.Findings, f)
			continue
		}
		if f, ok := e.checkStorage(ctx, p, fix); ok {
			rep.Findings = append(rep.Findings, f)
		}
	}
	if inv, ok := e.runtime.(Inventory); ok {
		envs, err := inv.Environments(ctx)
		if err != nil {
			return rep, fmt.Errorf("doctor: list environments: %w", err)
		}
		for _, env := range envs {
			p, ok := live[env.Slug]
			if env.ProjectID != "" {
				p, ok = liveIDs[env.ProjectID]
			}
			if !env.TerminatingSince.IsZero() {
				if e.now().Sub(env.TerminatingSince) > stuckTeardownAfter {
					rep.Findings = append(rep.Findings, Finding{Check: "stuck-teardown", Project: cmp.Or(p.Slug, env.Slug, env.ProjectID),
						Detail: fmt.Sprintf("%s %s is being deleted since %s and does not go: %s", env.Kind, env.Name,
							env.TerminatingSince.Format(time.RFC3339), env.Blocked),
						Fix: "see to what blocks it (a finalizer whose controller is down, a pod still using a volume); the project is safe in its snapshot"})
				}
				continue
			}
			if ok {
				continue
			}
			rep.Findings = append(rep.Findings, Finding{Check: "orphan-environment", Project: cmp.Or(env.Slug, env.ProjectID),
				Detail: fmt.Sprintf("%s %s belongs to no project (a deleted project's, or one of a store that was replaced)", env.Kind, env.Name),
				Fix:    "if nothing in it is wanted: " + env.Remove})
		}
	} else {
		rep.Unsupported = append(rep.Unsupported, "orphan-environment ("+e.runtime.Mode()+" runtime)")
	}
	if ci, ok := e.runtime.(ContainerInventory); ok {
		fs, err := e.checkMissingContainers(ctx, ci, liveIDs, fix)
		if err != nil {
			return rep, err
		}
		rep.Findings = append(rep.Findings, fs...)
	}
	if ai, ok := e.volumes.(ArchiveInventory); ok {
		fs, err := e.checkArchives(ctx, ai, ps)
		if err != nil {
			return rep, err
		}
		rep.Findings = append(rep.Findings, fs...)
	} else {
		rep.Unsupported = append(rep.Unsupported, "archives ("+e.volumes.Name()+" snapshots)")
	}
	if sc, ok := e.runtime.(SetupChecker); ok {
		rep.Findings = append(rep.Findings, sc.CheckSetup(ctx)...)
	}
	if r, ok := e.runtime.(Reaper); ok {
		if f, ok := e.checkTrash(ctx, r, fix); ok {
			rep.Findings = append(rep.Findings, f)
		}
	}
	slices.SortFunc(rep.Findings, func(a, b Finding) int {
		return compareStrings(a.Check+"\x00"+a.Project+"\x00"+a.Detail, b.Check+"\x00"+b.Project+"\x00"+b.Detail)
	})
	return rep, nil
}

// checkMissingContainers reports the containers of active projects that their runtime
// started and finds gone (removed by hand). The fix starts each again, as `container start`
// would: it deletes nothing, and puts back what the project ran before. A project that an
// operation holds, or that is not active, is left to that operation (a hibernation's stop
// forgets what it stops).
func (e *Engine) checkMissingContainers(ctx context.Context, ci ContainerInventory, live map[string]Project, fix bool) ([]Finding, error) {
	ms, err := ci.MissingContainers(ctx)
	if err != nil {
		return nil, fmt.Errorf("doctor: list missing containers: %w", err)
	}
	var out []Finding
	for _, m := range ms {
		p, ok := live[m.ProjectID]
		if !ok || p.Status != StatusActive || p.OpID != "" {
			continue
		}
		if _, _, err := e.container(ctx, p.ID, m.Container); errors.Is(err, ErrNotFound) {
			continue // no longer the project's: nothing to start
		}
		f := Finding{Check: "missing-container", Project: p.Slug, Fixable: true,
			Detail: fmt.Sprintf("container %s is gone: its %s container %s, started %s, was removed outside sailtui; it does not run",
				m.Container, e.runtime.Mode(), m.Name, m.StartedAt.Format(time.RFC3339)),
			Fix: "sailtui project start " + p.Slug + " recreates it (or: sailtui container start " + p.Slug + " " + m.Container +
				"; sailtui doctor --fix does that)"}
		if fix {
			if _, err := e.StartContainer(ctx, p.ID, m.Container); err != nil {
				f.Error = err.Error()
			} else {
				f.Fixed = true
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// checkTrash reports torn-down trees that wait in the trash longer than a background delete
// takes (a run ended before it was done). They are copies of what verified snapshots hold, so
// the fix deletes them; any later run of this runtime would too.
func (e *Engine) checkTrash(ctx context.Context, r Reaper, fix bool) (Finding, bool) {
	items, err := r.TrashLeft()
	if err != nil {
		return Finding{Check: "trash", Detail: "could not list the trash: " + err.Error(),
			Fix: "check the state directory's permissions, then run sailtui doctor again"}, true
	}
	var old []string
	for _, it := range items {
		if e.now().Sub(it.Since) > trashLeftAfter {
			old = append(old, it.Path)
		}
	}
	if len(old) == 0 {
		return Finding{}, false
	}
	f := Finding{Check: "trash", Fixable: true,
		Detail: fmt.Sprintf("%d torn-down project tree(s) wait in the trash to be deleted (a run ended before it was done; their snapshots were verified first): %s",
			len(old), strings.Join(old, ", ")),
		Fix: "sailtui doctor --fix deletes them (so does the next run of this mode, in the background)"}
	if fix {
		if err := r.EmptyTrash(ctx); err != nil {
			f.Error = err.Error()
		} else {
			f.Fixed = true
		}
	}
	return f, true
}

// checkStuck reports an operation whose holder died or went silent; the fix finishes it as the
// next sweep would.
func (e *Engine) checkStuck(ctx context.Context, p Project, fix bool) (Finding, bool) {
	if !e.stale(p) {
		return Finding{}, false
	}
	f := Finding{Check: "stuck-operation", Project: p.Slug, Fixable: true,
		Detail: fmt.Sprintf("%s held by %s, silent since %s", p.OpKind, p.OpOwner, p.OpHeartbeat.Format(time.RFC3339)),
		Fix:    "finish or roll it back: sailtui doctor --fix (or the next sweep, or: sailtui project wake " + p.Slug + ")"}
	if fix {
		// Resumed as a sweep resumes it: a finished delete leaves no live project to converge
		// to, and that is its success.
		if _, err := e.resume(ctx, p); err != nil && !errors.Is(err, ErrTouched) {
			f.Error = err.Error()
		} else {
			f.Fixed = true
		}
	}
	return f, true
}

// checkStorage reports an active project whose storage is gone; its newest ready snapshot, if
// any, is its way back.
func (e *Engine) checkStorage(ctx context.Context, p Project, fix bool) (Finding, bool) {
	if p.OpID == "" && p.Status == StatusHibernated {
		return e.checkPresent(ctx, p)
	}
	// A failed project with a hibernation snapshot is safe in it (a wake restores it).
	if p.OpID != "" || (p.Status != StatusActive && (p.Status != StatusFailed || p.HibernationSnapshot != "")) {
		return Finding{}, false
	}
	ok, err := e.runtime.ProjectExists(ctx, p)
	if err != nil {
		return Finding{Check: "storage", Project: p.Slug, Detail: "could not check its storage: " + err.Error(),
			Fix: "check that the " + e.runtime.Mode() + " runtime answers, then run sailtui doctor again"}, true
	}
	if ok {
		return Finding{}, false
	}
	f := Finding{Check: "storage", Project: p.Slug, Detail: string(p.Status) + ", but its storage is gone"}
	if made, err := e.environmentMade(ctx, p.ID); err != nil {
		f.Error = err.Error()
		return f, true
	} else if !made {
		f.Detail = string(p.Status) + ": its environment was never made (its creation failed)"
		f.Fix = "sailtui project start " + p.Slug + " makes it"
		return f, true
	}
	wake, err := e.newestRestorable(ctx, p)
	if err != nil {
		f.Error = err.Error()
		return f, true
	}
	if wake == nil {
		f.Fix = "no ready snapshot to restore from: recreate the project's files, or remove it (sailtui project rm " + p.Slug + " --yes)"
		return f, true
	}
	f.Detail += fmt.Sprintf("; the snapshot to wake it from is %s (%s, taken %s, %s ago)", wake.ID, wake.Type,
		wake.CreatedAt.Format(time.RFC3339), e.now().Sub(wake.CreatedAt).Round(time.Second))
	f.Fix = "mark it hibernated from " + wake.ID + " (sailtui doctor --fix), then: sailtui project wake " + p.Slug +
		"; if its storage comes back first, the wake keeps it as a safety snapshot before restoring"
	f.Fixable = true
	if fix {
		if err := e.markHibernated(ctx, p, wake.ID); err != nil {
			f.Error = err.Error()
		} else {
			f.Fixed = true
		}
	}
	return f, true
}

// newestRestorable is the snapshot p, without storage, wakes from: its newest ready hibernation
// snapshot (the last state sailtui itself put away), else its newest ready snapshot of any kind
// that holds its tree; nil when it has none.
func (e *Engine) newestRestorable(ctx context.Context, p Project) (*Snapshot, error) {
	snaps, err := e.store.ListSnapshots(ctx, SnapshotFilter{ProjectID: p.ID})
	if err != nil {
		return nil, err
	}
	var any *Snapshot
	for _, s := range newestFirst(snaps) {
		if s.Status != SnapshotReady {
			continue
		}
		if s.Type == SnapshotHibernation {
			return &s, nil
		}
		if any == nil && (s.Type == SnapshotSafety || s.Type == SnapshotManual) {
			any = &s
		}
	}
	return any, nil
}

// checkPresent reports a hibernated project whose storage is there: it came back after the
// project was pointed at a snapshot (a disk that was unmounted), or a wake left it. Nothing is
// fixed: the next wake keeps it as a safety snapshot before it restores.
func (e *Engine) checkPresent(ctx context.Context, p Project) (Finding, bool) {
	ok, err := e.runtime.ProjectExists(ctx, p)
	if err != nil {
		return Finding{Check: "storage", Project: p.Slug, Detail: "could not check its storage: " + err.Error(),
			Fix: "check that the " + e.runtime.Mode() + " runtime answers, then run sailtui doctor again"}, true
	}
	if !ok {
		return Finding{}, false
	}
	return Finding{Check: "storage", Project: p.Slug,
		Detail: "hibernated, but its storage is present (it may hold writes its snapshot " + p.HibernationSnapshot + " has not)",
		Fix: "sailtui project wake " + p.Slug + " keeps the present files as a safety snapshot, then restores " +
			p.HibernationSnapshot + "; sailtui snapshot restore " + p.Slug + " <safety snapshot> brings them back"}, true
}

// markHibernated records that p, active (or failed) without storage, is hibernated from snapshot id.
func (e *Engine) markHibernated(ctx context.Context, p Project, id string) error {
	// Held in its status: if this process dies here, the project is left as it was.
	o, err := e.claim(ctx, p, OpRepair, []ProjectStatus{p.Status}, p.Status, Claim{})
	if err != nil {
		return err
	}
	// Checked again under the hold: the storage may have come back meanwhile.
	ok, err := e.runtime.ProjectExists(ctx, p)
	if err == nil && ok {
		err = fmt.Errorf("storage of %s is back; left %s", p.Slug, p.Status)
	}
	if err != nil {
		_, ferr := o.finish(ctx, Release{To: p.Status, Reason: p.StatusReason}, OpRolledBack, nil)
		return errors.Join(err, ferr)
	}
	_, err = o.finish(ctx, Release{To: StatusHibernated, Reason: "doctor: storage was missing; wake restores " + id,
		SetHibernationSnapshot: true, HibernationSnapshot: id}, OpDone, nil)
	return err
}

// checkArchives compares the objects with the snapshots that name them.
func (e *Engine) checkArchives(ctx context.Context, ai ArchiveInventory, ps []Project) ([]Finding, error) {
	objs, err := ai.Archives(ctx)
	if err != nil {
		return nil, fmt.Errorf("doctor: list archives: %w", err)
	}
	have := map[string]bool{}
	for _, o := range objs {
		have[o.Key] = true
	}
	slugs := map[string]string{}
	for _, p := range ps {
		slugs[p.ID] = p.Slug
	}
	snaps, err := e.store.ListSnapshots(ctx, SnapshotFilter{IncludeDeleted: true})
	if err != nil {
		return nil, fmt.Errorf("doctor: list snapshots: %w", err)
	}
	named := map[string]bool{}
	var out []Finding
	for _, whole := range snaps {
		// The files' archive and one per service volume (parts), each an object of its own.
		subs := []Snapshot{whole}
		for i, pt := range whole.Parts {
			if pt.Absent {
				continue
			}
			subs = append(subs, whole.Part(i))
		}
		for _, s := range subs {
			key, err := ai.ArchiveKey(s)
			if err != nil {
				continue
			}
			named[key] = true
			if whole.Status == SnapshotReady && !have[key] {
				out = append(out, Finding{Check: "missing-archive", Project: slugs[whole.ProjectID],
					Detail: fmt.Sprintf("%s snapshot %s is ready but its object %s is gone", whole.Type, whole.ID, key),
					Fix:    "restore another snapshot if it is needed; remove it from the timeline: sailtui snapshot rm " + slugs[whole.ProjectID] + " " + whole.ID})
			}
		}
	}
	for _, o := range objs {
		if named[o.Key] {
			continue
		}
		out = append(out, Finding{Check: "orphan-archive",
			Detail: fmt.Sprintf("object %s (%d bytes, %s) belongs to no snapshot", o.Key, o.Size, o.ModTime.Format(time.RFC3339)),
			Fix:    "if no store that was replaced needs it, delete it with the object store's own tools"})
	}
	return out, nil
}
