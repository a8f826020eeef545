// Package engine is sailtui's orchestrator: the domain model, the project state machine, the
// lifecycle operations, the snapshot timeline and the sweeps. It talks to the outside world only
// through the interfaces in interfaces.go; backends implement them, the UI and CLI call the Engine.
package engine

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ProjectStatus is a project's place in the state machine. Every change of it is a
// compare-and-set in the Store, so an operation that loses a race does nothing.
type ProjectStatus string

const (
	StatusActive      ProjectStatus = "active"
	StatusHibernating ProjectStatus = "hibernating"
	StatusHibernated  ProjectStatus = "hibernated"
	StatusRestoring   ProjectStatus = "restoring"
	StatusFailed      ProjectStatus = "failed"
	StatusDeleted     ProjectStatus = "deleted"
)

// Project is one user project: a tree of files (its storage) and the containers that run parts of it.
type Project struct {
	ID           string        `json:"id"`
	Slug         string        `json:"slug"`
	Name         string        `json:"name"`
	Owner        string        `json:"owner"`
	Status       ProjectStatus `json:"status"`
	StatusReason string        `json:"status_reason,omitempty"`
	LastActivity time.Time     `json:"last_activity"`
	// LastActivitySource and LastActivityActor say which door the newest activity came
	// through ("files", "exec", "start", a platform's own) and who used it.
	LastActivitySource string `json:"last_activity_source,omitempty"`
	LastActivityActor  string `json:"last_activity_actor,omitempty"`
	// KeepAliveUntil keeps the idle sweep off the project until then (project keep-alive),
	// however long ago its last activity was.
	KeepAliveUntil time.Time `json:"keep_alive_until,omitzero"`
	// IdleWarnedAt is when the sweep last warned that the project will be hibernated (an
	// idle_warning event); the warning stands only while no activity came after it.
	IdleWarnedAt time.Time `json:"idle_warned_at,omitzero"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	// HibernationSnapshot is the snapshot a hibernated project wakes from.
	HibernationSnapshot string `json:"hibernation_snapshot,omitempty"`

	// The operation currently holding the project (empty when none). Held while a lifecycle
	// operation runs, so two operations never act on one project at once (invariant 3).
	OpID        string    `json:"op_id,omitempty"`
	OpKind      OpKind    `json:"op_kind,omitempty"`
	OpOwner     string    `json:"op_owner,omitempty"`
	OpHeartbeat time.Time `json:"op_heartbeat,omitzero"`
	// OpEpoch is the fencing token of the hold: every claim and every takeover gives the
	// project the next one, so a holder that was taken over is told apart from its taker
	// even though both carry the same OpID.
	OpEpoch int64 `json:"op_epoch,omitempty"`
}

// IdleWarned reports whether an idle warning stands for p: one was given and no activity came
// after it. It is as old as p.IdleWarnedAt says.
func (p Project) IdleWarned() bool {
	return !p.IdleWarnedAt.IsZero() && !p.IdleWarnedAt.Before(p.LastActivity)
}

// KeptAlive reports whether a keep-alive holds the idle sweep off p at t.
func (p Project) KeptAlive(t time.Time) bool { return p.KeepAliveUntil.After(t) }

// Container is one service of a project: a directory of the project tree and the command that
// serves it.
type Container struct {
	ProjectID string `json:"project_id"`
	Name      string `json:"name"`
	// Directory is relative to the project root; "." is the root itself.
	Directory string `json:"directory"`
	// Port is the port the service listens on inside its environment (0: from TESSLATE.md or default).
	Port int `json:"port,omitempty"`
	// Command overrides the startup command of TESSLATE.md (a service: its image's own) when set.
	Command string `json:"command,omitempty"`
	// OwnCommand says Command was given by a person (container add --command), not read from
	// .tesslate/config.json: a re-read of the file that gives the container no command of its
	// own keeps it, where it would otherwise take the file's (none) and lose it at every start.
	OwnCommand bool              `json:"own_command,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	// GitURL is stored with any credential removed.
	GitURL    string    `json:"git_url,omitempty"`
	GitBranch string    `json:"git_branch,omitempty"`
	CreatedAt time.Time `json:"created_at"`

	// Kind is what the container is: an app (the default) runs the project's code, a service
	// runs an image of its own with a data volume of its own, an external one is not run at
	// all and only gives its Exports.
	Kind ContainerKind `json:"kind,omitempty"`
	// Image: for an app, the image instead of the dev-server image; for a service, its image.
	Image string `json:"image,omitempty"`
	// DataPath is where a service's volume is mounted in its container.
	DataPath string `json:"data_path,omitempty"`
	// Exports are given to every container connected to this one, resolved against this one
	// (${HOST}, ${PORT}, its env): see ResolvedExports.
	Exports   map[string]string `json:"exports,omitempty"`
	Resources Resources         `json:"resources,omitzero"`
	// Primary marks the container shown first (.tesslate/config.json's primaryApp).
	Primary bool `json:"primary,omitempty"`
	// Endpoint is where an external service runs, as its config says (for humans).
	Endpoint string `json:"endpoint,omitempty"`
}

// ContainerKind says what a container is.
type ContainerKind string

// Container kinds. The zero value is an app, so containers stored before kinds existed are apps.
const (
	KindApp      ContainerKind = ""
	KindService  ContainerKind = "service"
	KindExternal ContainerKind = "external"
)

// String names the kind for humans ("app" for the zero value).
func (k ContainerKind) String() string {
	if k == KindApp {
		return "app"
	}
	return string(k)
}

// Runs reports whether a runtime runs the container (an external one it never sees).
func (c Container) Runs() bool { return c.Kind != KindExternal }

// IsService reports whether the container is a service: its own image and data volume.
func (c Container) IsService() bool { return c.Kind == KindService }

// Resources are requests and limits as Kubernetes quantities ("512Mi", "100m"); runtimes that
// cannot apply them ignore them.
type Resources struct {
	MemoryRequest string `json:"memory_request,omitempty"`
	MemoryLimit   string `json:"memory_limit,omitempty"`
	CPURequest    string `json:"cpu_request,omitempty"`
	CPULimit      string `json:"cpu_limit,omitempty"`
}

// IsZero reports whether no request or limit is set.
func (r Resources) IsZero() bool { return r == Resources{} }

// Running lists the containers a runtime runs: all but the external ones.
func Running(cs []Container) []Container {
	out := make([]Container, 0, len(cs))
	for _, c := range cs {
		if c.Runs() {
			out = append(out, c)
		}
	}
	return out
}

// Connection says container From depends on container To (start order, env wiring).
type Connection struct {
	ProjectID string `json:"project_id"`
	From      string `json:"from"`
	To        string `json:"to"`
}

// SnapshotType distinguishes the timeline's user snapshots from the ones the engine makes.
type SnapshotType string

const (
	SnapshotManual      SnapshotType = "manual"
	SnapshotHibernation SnapshotType = "hibernation"
	SnapshotSafety      SnapshotType = "safety"
)

// SnapshotStatus is where a snapshot is in its life.
type SnapshotStatus string

const (
	SnapshotPending SnapshotStatus = "pending"
	SnapshotReady   SnapshotStatus = "ready"
	SnapshotError   SnapshotStatus = "error"
	SnapshotDeleted SnapshotStatus = "deleted"
)

// MaxManualSnapshots is the timeline's limit of manual snapshots per project (invariant 5).
const MaxManualSnapshots = 5

// SnapshotRetention is how long a soft-deleted snapshot is kept before the purge removes it.
const SnapshotRetention = 30 * 24 * time.Hour

// Snapshot is a point in a project's timeline: a copy of all of its storage.
type Snapshot struct {
	ID        string         `json:"id"`
	ProjectID string         `json:"project_id"`
	Owner     string         `json:"owner"`
	Type      SnapshotType   `json:"type"`
	Label     string         `json:"label"`
	Status    SnapshotStatus `json:"status"`
	CreatedAt time.Time      `json:"created_at"`
	ReadyAt   time.Time      `json:"ready_at,omitzero"`
	// DeletedAt is set when the snapshot is soft-deleted; the purge removes it after SnapshotRetention.
	DeletedAt time.Time `json:"deleted_at,omitzero"`
	// SizeBytes is the data the snapshot holds as stored (an archive's bytes); 0 when its
	// Volumes cannot tell (a CSI snapshot, of which a driver reports only CapacityBytes).
	SizeBytes int64 `json:"size_bytes"`
	// CapacityBytes is the size of the volume a restore of it needs (a CSI snapshot's
	// restoreSize, usually the PVC's capacity): not data, and never shown or summed as data.
	CapacityBytes int64 `json:"capacity_bytes,omitempty"`
	// UnpackedBytes is what the snapshot holds unpacked (archives: the sum of the files' sizes),
	// recorded when it is made so a restore stops as soon as an object expands past it; 0 or
	// less when unknown (-1: recorded before sailtui kept it) or nothing to bound.
	UnpackedBytes int64 `json:"unpacked_bytes"`
	// SHA256 of the stored archive (archive-backed volumes); checked on every restore.
	SHA256 string `json:"sha256,omitempty"`
	// Location is where the data lives: an object key, a VolumeSnapshot name.
	Location string `json:"location,omitempty"`
	// Backend names the Volumes implementation that made it (e.g. "archive", "csi").
	Backend string `json:"backend,omitempty"`
	Error   string `json:"error,omitempty"`
	// Parts are the service volumes captured with the project's files, one each, filled in by
	// the Volumes that made the snapshot. The files are the snapshot's own fields above; a
	// project without services has no parts. The snapshot is ready only when every part is.
	Parts []SnapshotPart `json:"parts,omitempty"`
	// Skipped is what the Volumes that made the snapshot found and could not keep (sockets,
	// devices), for the operation to report; it is not stored.
	Skipped SkippedEntries `json:"-"`
}

// SkippedEntries counts the entries a snapshot left out because no snapshot can hold them,
// and names the first few (paths relative to the project or service volume).
type SkippedEntries struct {
	Count int64
	First []string
}

// SnapshotPart is one service volume of a snapshot.
type SnapshotPart struct {
	// Name is the service container the volume belongs to.
	Name          string `json:"name"`
	Location      string `json:"location,omitempty"`
	SizeBytes     int64  `json:"size_bytes"`
	CapacityBytes int64  `json:"capacity_bytes,omitempty"`
	UnpackedBytes int64  `json:"unpacked_bytes"`
	SHA256        string `json:"sha256,omitempty"`
	// Absent: the service had no volume when the snapshot was taken (it was never started),
	// so there is nothing to hold and nothing to restore; its first start makes one.
	Absent bool `json:"absent,omitempty"`
}

// TotalBytes is the stored size of the snapshot with all of its parts: data only, 0 for
// what its Volumes report only as capacity (see TotalCapacity).
func (s Snapshot) TotalBytes() int64 {
	n := s.SizeBytes
	for _, p := range s.Parts {
		n += p.SizeBytes
	}
	return n
}

// TotalCapacity is the volume capacity a restore of the snapshot and all of its parts needs,
// where that is what its Volumes report (CSI); 0 otherwise.
func (s Snapshot) TotalCapacity() int64 {
	n := s.CapacityBytes
	for _, p := range s.Parts {
		n += p.CapacityBytes
	}
	return n
}

// TakenBy names the operation that takes a snapshot of type t, for progress reports.
func (t SnapshotType) TakenBy() OpKind {
	switch t {
	case SnapshotHibernation:
		return OpHibernate
	case SnapshotSafety:
		return OpRestore
	default:
		return OpSnapshot
	}
}

// OpKind names a journaled operation.
type OpKind string

const (
	OpHibernate OpKind = "hibernate"
	OpWake      OpKind = "wake"
	OpRestore   OpKind = "restore"
	OpSnapshot  OpKind = "snapshot"
	OpDelete    OpKind = "delete"
	OpStart     OpKind = "start"
	OpStop      OpKind = "stop"
	OpCreate    OpKind = "create"
	// OpRepair is the doctor setting a project's record right (never its storage).
	OpRepair OpKind = "repair"
)

// OpState is the outcome of a journaled operation.
type OpState string

const (
	OpRunning    OpState = "running"
	OpDone       OpState = "done"
	OpFailed     OpState = "failed"
	OpRolledBack OpState = "rolled-back"
)

// Operation is one entry of the operations journal: a lifecycle operation and the last step it
// reached, so a process killed at any step leaves enough behind for the next one to converge.
type Operation struct {
	ID         string    `json:"id"`
	ProjectID  string    `json:"project_id"`
	Kind       OpKind    `json:"kind"`
	Step       string    `json:"step"`
	State      OpState   `json:"state"`
	SnapshotID string    `json:"snapshot_id,omitempty"`
	Owner      string    `json:"owner"`
	StartedAt  time.Time `json:"started_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Error      string    `json:"error,omitempty"`
	// Epoch is the hold epoch of the process that writes the entry now: a takeover moves it
	// (in the claim's transaction), so the superseded holder's journal writes are refused.
	Epoch int64 `json:"epoch,omitempty"`
}

// ContainerStatus is what a runtime reports for one container.
type ContainerStatus struct {
	Name  string         `json:"name"`
	State ContainerState `json:"state"`
	// Port is the port the service listens on inside its container, when the runtime can tell
	// (docker: the port the container was made with, running or exited); 0 otherwise.
	Port int `json:"port,omitempty"`
	// HostPort is where the service can be reached from this machine (0 when not running).
	HostPort int    `json:"host_port,omitempty"`
	URL      string `json:"url,omitempty"`
	LocalURL string `json:"local_url,omitempty"`
	// Unrouted says that no router is known to serve URL (docker mode without a Traefik
	// container configured): LocalURL is then the address that works, and what tables show.
	Unrouted bool `json:"unrouted,omitempty"`
	// RouteProblem says why nothing serves URL although the container runs, when the runtime
	// can tell (kubernetes: the cluster has no such Ingress class).
	RouteProblem string    `json:"route_problem,omitempty"`
	PID          int       `json:"pid,omitempty"`
	StartedAt    time.Time `json:"started_at,omitzero"`
	ExitCode     int       `json:"exit_code,omitempty"`
	// PortAnswers says whether the running container accepted a connection on its port when
	// Engine.ProbeContainers looked (PortProber); nil when nothing was probed (not running, or a
	// runtime that cannot tell). A URL is live only when it is true.
	PortAnswers *bool  `json:"port_answers,omitempty"`
	Detail      string `json:"detail,omitempty"`
	// Blocked says that a starting container will not run without someone changing something
	// (its image cannot be pulled, its configuration is refused); Detail says what. A start
	// fails on it at once rather than wait out the start timeout.
	Blocked bool `json:"blocked,omitempty"`
	// Volume names a service's data volume as the runtime knows it (a Docker volume, a PVC).
	Volume string `json:"volume,omitempty"`
}

// ContainerState is a container's state as its runtime reports it.
type ContainerState string

// Container states as reported by runtimes.
const (
	ContainerRunning  ContainerState = "running"
	ContainerStopped  ContainerState = "stopped"
	ContainerExited   ContainerState = "exited"
	ContainerStarting ContainerState = "starting"
	ContainerUnknown  ContainerState = "unknown"
	// ContainerMissing is a container its runtime started and did not stop whose runtime
	// object is gone (docker: removed by hand): it was meant to run, and nothing brings it
	// back but a start. Detail says what to do.
	ContainerMissing ContainerState = "missing"
	// ContainerExternal is the state of an external service: nothing of it runs in the project.
	ContainerExternal ContainerState = "external"
)

// FileInfo describes one entry of a project's tree.
type FileInfo struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"`
	IsDir   bool      `json:"is_dir"`
	ModTime time.Time `json:"mod_time"`
	// Target is set for symlinks.
	Target string `json:"target,omitempty"`
}

// ExecRequest runs a command inside a container's environment.
type ExecRequest struct {
	Argv []string
	// Dir is relative to the container's directory ("" = the directory itself).
	Dir     string
	Env     map[string]string
	Stdin   []byte
	Timeout time.Duration
	// MaxOutput caps stdout and stderr each; output past it is dropped and Truncated is set.
	MaxOutput int
}

// envNotCreated is the reason of a project whose creation could not make its environment.
const envNotCreated = "environment could not be created"

// NextStep is what moves a failed project on, as the command to run, for every place that
// shows a failed project ("" for any other state): the reason says what went wrong, this says
// what to do about it.
func NextStep(p Project) string {
	if p.Status != StatusFailed {
		return ""
	}
	switch {
	case p.HibernationSnapshot != "":
		// Its snapshot is the project: the teardown can be finished, or the tree restored.
		return fmt.Sprintf("sailtui project hibernate %s finishes the hibernation from its snapshot, or sailtui project wake %s restores from it",
			p.Slug, p.Slug)
	case strings.Contains(p.StatusReason, "delete") || strings.Contains(p.StatusReason, "retire"):
		return fmt.Sprintf("sailtui project rm %s --yes tries the removal again", p.Slug)
	case p.StatusReason == envNotCreated:
		// Nothing was lost: a start makes the environment.
		return fmt.Sprintf("sailtui project start %s creates its environment and starts it", p.Slug)
	case strings.Contains(p.StatusReason, "creat") || strings.Contains(p.StatusReason, "import") || strings.Contains(p.StatusReason, "clone"):
		return fmt.Sprintf("sailtui project rm %s --yes, then create it again", p.Slug)
	}
	return fmt.Sprintf("sailtui doctor shows what is wrong; sailtui project start %s tries again", p.Slug)
}

// ExecStreams are the streams of an exec run by ExecStream. Stdin may be nil (no input).
type ExecStreams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// TermSize is a terminal's size in character cells.
type TermSize struct {
	Cols, Rows uint16
}

// DefaultTermSize is the size of a terminal nobody gave one: the VT100's.
var DefaultTermSize = TermSize{Cols: 80, Rows: 24}

// Terminal is the terminal an exec run by ExecTerminal is attached to.
type Terminal struct {
	// In is what is typed at the terminal; nil gives the command no input (it sees none
	// arrive, as docker exec -t without -i). A copy from In may outlive the exec: the caller
	// ends it by closing In or ending its process.
	In io.Reader
	// Out receives everything the command writes to its terminal, stdout and stderr alike.
	Out io.Writer
	// Size is the terminal's size at the start; zero is DefaultTermSize.
	Size TermSize
	// Resize delivers the terminal's later sizes; nil when it keeps its size.
	Resize <-chan TermSize
}

// StartSize is t's size at the start.
func (t Terminal) StartSize() TermSize {
	if t.Size.Cols == 0 || t.Size.Rows == 0 {
		return DefaultTermSize
	}
	return t.Size
}

// Exit codes of Exec that do not come from the command itself. They follow the shell and
// timeout(1), so a caller reads them the same way whatever runtime ran the command.
const (
	// ExitTimedOut is reported (with TimedOut set) when the request's timeout killed the command.
	ExitTimedOut = 124
	// ExitCannotExecute is reported when argv[0] exists but cannot be executed.
	ExitCannotExecute = 126
	// ExitNotFound is reported when argv[0] is not found.
	ExitNotFound = 127
)

// ExecResult is what a command left behind.
type ExecResult struct {
	Stdout    []byte `json:"stdout"`
	Stderr    []byte `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	TimedOut  bool   `json:"timed_out"`
	Truncated bool   `json:"truncated"`
}

// LogOptions selects which part of a container's log to read.
type LogOptions struct {
	Follow bool
	// Tail is the number of last lines to start with; 0 means all, negative means none.
	Tail int
	// Timestamps puts the time each line was written in front of it (LogTimeLayout, then a
	// space; ParseLogLine splits it off): the runtime's own record of the time, not the time
	// the line was read.
	Timestamps bool
}

// Event is a status change published through the Notifier.
type Event struct {
	Time      time.Time     `json:"time"`
	ProjectID string        `json:"project"`
	Slug      string        `json:"slug"`
	From      ProjectStatus `json:"from,omitempty"`
	To        ProjectStatus `json:"to,omitempty"`
	// Kind is "status" for state changes, or "snapshot", "container", "progress".
	Kind     string `json:"kind,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
}

// Progress is a long operation's report: the phase it is in and bytes done of total (0 when unknown).
type Progress struct {
	ProjectID string `json:"project"`
	Op        OpKind `json:"op"`
	Phase     string `json:"phase"`
	Done      int64  `json:"done"`
	Total     int64  `json:"total"`
}

// CheckCommand refuses a startup command no runtime can run: one with a NUL byte, or none when
// required (every container but a service, which may run its image's own command).
func (s StartSpec) CheckCommand(required bool) error {
	if required && strings.TrimSpace(s.Command) == "" {
		return fmt.Errorf("no startup command (neither the container nor TESSLATE.md gives one): %w", ErrBadInput)
	}
	if strings.IndexByte(s.Command, 0) >= 0 {
		return fmt.Errorf("startup command contains a NUL byte: %w", ErrBadInput)
	}
	return nil
}

// Validate refuses a request no runtime can run: no command, or an argument with a NUL byte
// (no exec call can pass one).
func (r ExecRequest) Validate() error {
	if len(r.Argv) == 0 || r.Argv[0] == "" {
		return fmt.Errorf("no command given: %w", ErrBadInput)
	}
	for _, a := range r.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %q contains a NUL byte: %w", a, ErrBadInput)
		}
	}
	return nil
}
