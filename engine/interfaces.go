package engine

import (
	"context"
	"io"
	"time"
)

// Store keeps the engine's state: projects, containers, connections, snapshots, the operations
// journal and activity. Every implementation passes the contract suite in engine/storetest.
//
// Lookups that find nothing return an error wrapping ErrNotFound; a lost compare-and-set returns
// one wrapping ErrConflict.
type Store interface {
	// CreateProject inserts a project with its containers and connections in one transaction.
	// A slug already in use (by a project not deleted) gives ErrExists.
	CreateProject(ctx context.Context, p Project, cs []Container, conns []Connection) error
	// GetProject finds a project by id or by slug (a live project's slug wins over deleted ones).
	GetProject(ctx context.Context, idOrSlug string) (Project, error)
	ListProjects(ctx context.Context, f ProjectFilter) ([]Project, error)
	// ListProjectsChangedSince is the incremental read of the projects list. Cursor 0 lists
	// every live project; a cursor from an earlier answer lists every project whose record
	// changed since that read (activity included), deleted ones too, so a reader can drop them.
	// A project may come again without a change (reads overlap), never be missed.
	ListProjectsChangedSince(ctx context.Context, cursor int64) (ProjectChanges, error)
	// IdleProjects lists active projects held by no operation whose last activity is before
	// idleBefore and that no keep-alive holds at asOf (keep_alive_until after it), oldest
	// first, at most limit (0: no limit).
	IdleProjects(ctx context.Context, idleBefore, asOf time.Time, limit int) ([]Project, error)
	// HeldProjects lists projects held by an operation (the sweep checks them for stale holders).
	HeldProjects(ctx context.Context) ([]Project, error)
	// Touch records activity: last_activity becomes max(last_activity, a.At), and its source
	// and actor become a's when a is not older than the stored activity (an older touch
	// reported late leaves the newer one's source).
	Touch(ctx context.Context, projectID string, a Activity) error

	// SetKeepAlive keeps a project off the idle sweep until until (zero: no longer) and, unless
	// a.At is zero, records the activity a (as Touch), in one write; it returns the project as
	// it is after. ErrNotFound when there is no such project.
	SetKeepAlive(ctx context.Context, projectID string, until time.Time, a Activity) (Project, error)

	// MarkIdleWarned records that the sweep warned at at that the project will be hibernated,
	// and adds the warning to the project's history. ErrNotFound when there is no such project.
	MarkIdleWarned(ctx context.Context, projectID string, at time.Time) error

	// RouterCounters are the request counters of router kept by the last SaveRouterCounters
	// (none: an empty map); SaveRouterCounters replaces them. The sweep compares a router's
	// counters with these to tell which routes had requests since.
	RouterCounters(ctx context.Context, router string) (map[string]float64, error)
	SaveRouterCounters(ctx context.Context, router string, counters map[string]float64) error

	// ListHistory lists a project's history lines, newest first, at most limit (0: all). Every
	// activity Touch, SetKeepAlive, BeginUse and EndUse record is also kept there, coalesced: a
	// touch through a source whose newest line was last touched no more than ActivityQuiet
	// before it extends that line (first and last time, count, newest actor), else it begins a
	// new one. MarkIdleWarned adds an idle_warning line. The newest MaxHistory lines of a
	// project are kept. Operations are not lines here: the journal (ListOps) has them.
	ListHistory(ctx context.Context, projectID string, limit int) ([]HistoryEntry, error)

	// ClaimProject atomically takes a project for an operation; see Claim. On success it returns
	// the project as it is after the claim.
	ClaimProject(ctx context.Context, projectID string, c Claim) (Project, error)
	// Heartbeat refreshes the holder's heartbeat. It is also the fenced check an operation
	// makes before a step outside the store: ErrSuperseded (with ErrConflict) when h no longer
	// holds the project, at that epoch.
	Heartbeat(ctx context.Context, projectID string, h Hold, at time.Time) error
	// SetProjectStatus moves a held project to another status without releasing it.
	// ErrSuperseded (with ErrConflict) when h no longer holds it.
	SetProjectStatus(ctx context.Context, projectID string, h Hold, to ProjectStatus, reason string, at time.Time) (Project, error)
	// ReleaseProject ends the hold of r.OpID at r.Epoch, setting the final status (and the
	// hibernation snapshot when r.SetHibernationSnapshot). ErrSuperseded (with ErrConflict)
	// when that hold is gone.
	ReleaseProject(ctx context.Context, projectID string, r Release) (Project, error)

	ListContainers(ctx context.Context, projectID string) ([]Container, error)
	// PutContainer inserts or replaces a container (by project and name).
	PutContainer(ctx context.Context, c Container) error
	// DeleteContainer removes a container and every connection that names it.
	DeleteContainer(ctx context.Context, projectID, name string) error
	ListConnections(ctx context.Context, projectID string) ([]Connection, error)
	PutConnection(ctx context.Context, c Connection) error
	DeleteConnection(ctx context.Context, c Connection) error

	// InsertSnapshot adds a snapshot. For a manual snapshot it counts the project's manual
	// snapshots that are not deleted in the same transaction and refuses with ErrTimelineFull
	// when there are already maxManual of them (invariant 5). When by names a hold, the insert
	// is made only while by holds the snapshot's project, else ErrSuperseded.
	InsertSnapshot(ctx context.Context, s Snapshot, maxManual int, by Hold) error
	// UpdateSnapshot replaces the stored fields of snapshot s.ID. When by names a hold (an
	// operation's write), the update is made only while by holds the snapshot's project, in
	// the same transaction, else ErrSuperseded; a zero by is a write of no operation (relabel).
	UpdateSnapshot(ctx context.Context, s Snapshot, by Hold) error
	GetSnapshot(ctx context.Context, id string) (Snapshot, error)
	ListSnapshots(ctx context.Context, f SnapshotFilter) ([]Snapshot, error)
	// UndeleteSnapshot brings soft-deleted snapshot id back as ready, when it was deleted after
	// deletedAfter (the purge's are older) and has no error (a failed one has no data). A
	// manual one is counted against maxManual in the same transaction and refused with
	// ErrTimelineFull when the timeline is full (invariant 5). ErrNotFound when there is no such
	// snapshot, ErrConflict when it is not deleted, failed or too old.
	UndeleteSnapshot(ctx context.Context, id string, deletedAfter time.Time, maxManual int) (Snapshot, error)
	// DeleteSnapshotRecord forgets a snapshot for good (after the purge removed its data).
	DeleteSnapshotRecord(ctx context.Context, id string) error

	// The operations journal. An entry belongs to the hold at op.Epoch: InsertOp and UpdateOp
	// of a running entry are made only while the project is held by op.ID at op.Epoch, and
	// UpdateOp only while the entry's stored epoch is op.Epoch (a takeover moved it otherwise);
	// else ErrSuperseded. A takeover's claim moves the entry's epoch in its own transaction.
	// Epoch 0 is an entry of no hold (written before fencing): only the epoch compare applies.
	InsertOp(ctx context.Context, op Operation) error
	UpdateOp(ctx context.Context, op Operation) error
	GetOp(ctx context.Context, id string) (Operation, error)
	// ListOps lists a project's operations, newest first, at most limit (0: all).
	ListOps(ctx context.Context, projectID string, limit int) ([]Operation, error)

	// BeginUse records a shared use of a project (a file operation or an exec) and counts it
	// as activity (at u.StartedAt, source u.Source, actor u.Owner, as Touch), in one transaction: it is refused with ErrConflict when the project is not
	// active or is held by an operation of one of the kinds in exclusive. So an exclusive
	// operation that claimed the project sees every use that began before its claim, and no
	// use begins after it (invariant 9).
	BeginUse(ctx context.Context, u Use, exclusive []OpKind) error
	// EndUse forgets a use and, unless touch.At is zero, records the activity touch (as Touch).
	// A use that is no longer there (an operation dropped it) gives ErrNotFound: its holder
	// must not report success for what it did under it.
	EndUse(ctx context.Context, projectID, useID string, touch Activity) error
	// GetUse reads a use (its holder polls it for a revocation); ErrNotFound once it is gone.
	GetUse(ctx context.Context, useID string) (Use, error)
	// HeartbeatUse refreshes a use's heartbeat; ErrNotFound once it is gone.
	HeartbeatUse(ctx context.Context, useID string, at time.Time) error
	// RevokeUse asks a use's holder to stop, with the reason it will report.
	RevokeUse(ctx context.Context, useID, reason string) error
	// ListUses lists a project's uses, oldest first.
	ListUses(ctx context.Context, projectID string) ([]Use, error)

	// TryLock takes a named lock (the global sweep lock) for owner until ttl after now, or until
	// Unlock. ok is false when another owner holds it and it has not expired.
	TryLock(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (ok bool, err error)
	Unlock(ctx context.Context, name, owner string) error
	// LockHolder names the owner of a named lock as of now ("" when it is free or expired).
	LockHolder(ctx context.Context, name string, now time.Time) (string, error)
	// TakeOverLock gives the lock to owner for ttl if it is still held by from (a holder known
	// to be dead); ok is false when it changed hands meanwhile.
	TakeOverLock(ctx context.Context, name, from, owner string, now time.Time, ttl time.Duration) (ok bool, err error)

	// Describe names the store for humans ("sqlite /path/to/db", "postgres host/db").
	Describe() string
	Close() error
}

// ProjectFilter narrows ListProjects.
type ProjectFilter struct {
	Statuses       []ProjectStatus
	IncludeDeleted bool
	Owner          string
}

// ProjectChanges is one incremental read of the projects list.
type ProjectChanges struct {
	Projects []Project
	// Cursor is opaque: the next read passes it to see only what changed after this one.
	Cursor int64
}

// SnapshotFilter narrows ListSnapshots. Zero values match everything except deleted snapshots.
type SnapshotFilter struct {
	ProjectID      string
	Types          []SnapshotType
	IncludeDeleted bool
	// OnlyDeletedBefore, when set, lists only snapshots soft-deleted before that time (the purge).
	OnlyDeletedBefore time.Time
}

// Claim is the compare-and-set that gives an operation a project.
type Claim struct {
	OpID  string
	Kind  OpKind
	Owner string
	Now   time.Time
	// From lists the statuses the project may be in; To is its status after the claim.
	From []ProjectStatus
	To   ProjectStatus
	// IdleBefore, when set, also requires last_activity <= IdleBefore (invariant 4: a project
	// touched after the sweep selected it is not claimed).
	IdleBefore time.Time
	// KeptAliveAt, when set, also requires that no keep-alive holds the project at that time
	// (keep_alive_until <= KeptAliveAt): a keep-alive set after the sweep selected it wins.
	KeptAliveAt time.Time
	// TakeOver, when set, lets the claim replace that (stale) holder; otherwise the project must
	// be held by nobody. Either way the project gets the next hold epoch (Project.OpEpoch of
	// the answer), and a takeover moves the journal entry of TakeOver to it in the same
	// transaction, so the stale holder's next fenced write is refused.
	TakeOver string
}

// Hold names one holder of a project: the operation and the epoch its claim or takeover got.
// Two processes that both carry an operation's id after a takeover have different epochs, and
// only the newest one's fenced writes are accepted. The zero Hold is "no operation".
type Hold struct {
	OpID  string
	Epoch int64
}

// HoldOf is the hold p is under now.
func HoldOf(p Project) Hold { return Hold{OpID: p.OpID, Epoch: p.OpEpoch} }

// Release ends an operation's hold on a project.
type Release struct {
	OpID   string
	Epoch  int64
	To     ProjectStatus
	Reason string
	Now    time.Time
	// SetHibernationSnapshot stores HibernationSnapshot (which may be "" to clear it).
	SetHibernationSnapshot bool
	HibernationSnapshot    string
}

// Runtime runs a project's containers and gives access to its files. One implementation per
// deployment mode; every one passes the contract suite in engine/runtimetest.
type Runtime interface {
	// Mode is the deployment mode: "local", "docker", "kubernetes".
	Mode() string
	// EnsureProject creates the project's environment and storage if they are missing
	// (idempotent): directory, network, namespace and volume.
	EnsureProject(ctx context.Context, p Project) error
	// StartContainer starts a container (idempotent: a running one is left alone). spec is the
	// resolved startup: command and port from the container and its TESSLATE.md.
	StartContainer(ctx context.Context, p Project, c Container, spec StartSpec) (ContainerStatus, error)
	StopContainer(ctx context.Context, p Project, c Container) error
	ContainerStatus(ctx context.Context, p Project, c Container) (ContainerStatus, error)
	// StopProject stops every container of the project, and what the project's execs left
	// running with them (a hibernation snapshots and removes the tree next: nothing may run
	// on in it); storage stays.
	StopProject(ctx context.Context, p Project, cs []Container) error
	// DestroyProject removes the environment and its storage. The engine calls it only after a
	// ready, verified snapshot of all the storage exists (invariant 1). Idempotent.
	DestroyProject(ctx context.Context, p Project, cs []Container) error
	// ProjectExists reports whether the project's storage is present.
	ProjectExists(ctx context.Context, p Project) (bool, error)

	// File operations take paths relative to the project root and refuse any that would leave
	// it (invariant 8) with an error wrapping ErrBadPath.
	ReadFile(ctx context.Context, p Project, path string, w io.Writer) error
	WriteFile(ctx context.Context, p Project, path string, r io.Reader) error
	DeleteFile(ctx context.Context, p Project, path string) error
	ListFiles(ctx context.Context, p Project, path string) ([]FileInfo, error)

	Exec(ctx context.Context, p Project, c Container, req ExecRequest) (ExecResult, error)
	// Logs streams a container's log; with Follow it ends when ctx is cancelled.
	Logs(ctx context.Context, p Project, c Container, opts LogOptions) (io.ReadCloser, error)
	// Describe is the runtime's own view of the project, for humans.
	Describe(ctx context.Context, p Project, cs []Container) (string, error)
}

// StartSpec is what a container runs, resolved by the engine from the container and TESSLATE.md
// with the one parser, so every runtime gets the same command for the same text.
type StartSpec struct {
	Command string
	Port    int
	Env     map[string]string
	// DependsOn names the containers this one depends on (from the project's connections), for
	// runtimes that record start order (docker compose's depends_on). The engine already starts
	// them first.
	DependsOn []string

	// declaredPort says that Port was declared (the container's own, TESSLATE.md's explicit
	// or inferred port), not the fallback default: a start then waits for it to answer.
	declaredPort bool
}

// DeclaredPort is Port when it was declared (the container's own, TESSLATE.md's explicit or
// inferred port), 0 when Port is only the fallback default: what a listing of a container
// that does not run can say of its port without making one up.
func (s StartSpec) DeclaredPort() int {
	if !s.declaredPort {
		return 0
	}
	return s.Port
}

// RemoteFiles is offered by runtimes whose file operations run a process inside the project's
// environment (kubernetes: an exec into the file-manager pod). Starting a container that has a
// command of its own then reads no file: StartSpecFor takes the container's command and port as
// they are, so start, stop and hibernate never depend on a process in a pod. A container without
// a command still reads its TESSLATE.md, through that process.
type RemoteFiles interface {
	FilesNeedProcess() bool
}

// FilesReadier is offered by RemoteFiles runtimes that can tell at once, without waiting,
// whether the process their file operations need is there now. A start reads
// .tesslate/config.json again only then: it never waits for that process (see RemoteFiles).
type FilesReadier interface {
	FilesReady(ctx context.Context, p Project) bool
}

// NameSharer is offered by runtimes whose names for containers share one namespace across
// projects (docker: <slug>-<container>), so that containers of two projects can map to one name
// (project dk-a's container b and project dk's container a-b are both dk-a-b). Before it
// records a container the engine looks up every rival and refuses the new one when a rival's
// container maps to the same name: the mapping stays injective over the live projects.
type NameSharer interface {
	// NameRivals returns the runtime name of container name in p and, for each other project
	// slug whose container could get that same runtime name, that container's name.
	NameRivals(p Project, name string) (runtimeName string, rivals map[string]string)
}

// ExecStreamer is offered by runtimes that run an exec with its streams attached, as
// `docker exec -i` does: the command reads s.Stdin (to its end) and its output reaches
// s.Stdout and s.Stderr as it is written, uncapped (the result's Stdout and Stderr are then
// empty). Otherwise as Runtime.Exec: exit code, timeout, cancellation.
type ExecStreamer interface {
	ExecStream(ctx context.Context, p Project, c Container, req ExecRequest, s ExecStreams) (ExecResult, error)
}

// UsageReader is offered by runtimes that measure what their containers use: local processes
// through /proc, docker through the stats API, kubernetes through the metrics API when the
// cluster serves one. Usage returns an entry, by container name, for each container of cs it
// measured; one it could not (not running, no figures yet) has none. When the runtime can
// measure nothing at all here (the cluster has no metrics API), the error wraps ErrNotAvailable
// and says why, once for the whole project, as "CPU and memory not available: <why>".
//
// CPU is averaged since the previous call measured the same container, when that was recent
// (the console calls it at its refresh pace), else over a short sample the call waits for: a
// caller never needs to call twice, and calling more often than the console refreshes only
// narrows the window.
type UsageReader interface {
	Usage(ctx context.Context, p Project, cs []Container) (map[string]ContainerUsage, error)
}

// ExecTerminal is offered by runtimes that run an exec on a terminal of its own, as
// `docker exec -it` does: the command's stdin, stdout and stderr are one pseudo-terminal, fed
// from t.In and copied to t.Out as it is written; the terminal starts at t.Size and follows
// every size t.Resize delivers. Otherwise as Runtime.Exec: exit code (128+signal for a command
// killed by one), a timeout (only when req.Timeout is set) kills the command and what it
// started with ExitCode 124 and TimedOut, ctx ending kills them and returns ctx's error. The
// result's Stdout and Stderr are empty; a command that is not found is reported on t.Out.
type ExecTerminal interface {
	ExecTerminal(ctx context.Context, p Project, c Container, req ExecRequest, t Terminal) (ExecResult, error)
}

// GitCloner is offered by runtimes that can fetch a template into a container's directory.
type GitCloner interface {
	// CloneInto clones url (depth 1, branch if set) into dir of the project when dir is empty.
	CloneInto(ctx context.Context, p Project, dir, url, branch string) error
}

// Volumes is what a snapshot is for a runtime: an archive in an ObjectStore, a CSI VolumeSnapshot.
type Volumes interface {
	// Name identifies the implementation; stored in Snapshot.Backend.
	Name() string
	// Create captures all of p's storage into snapshot s (s.ID is fixed by the engine and reused
	// on a retry). It fills Location, SizeBytes and SHA256 of the result. Progress goes to the
	// reporter of ctx (ProgressFrom), when there is one.
	Create(ctx context.Context, p Project, s Snapshot) (Snapshot, error)
	// WaitReady returns once the snapshot is complete and verified (archives: read back and
	// checksum compared), or an error.
	WaitReady(ctx context.Context, s Snapshot) (Snapshot, error)
	// Restore replaces p's storage with the snapshot's contents, creating the storage if it is
	// gone. The old contents are replaced only after the snapshot was read completely.
	// Progress goes to the reporter of ctx, as for Create.
	Restore(ctx context.Context, p Project, s Snapshot) error
	// Delete removes what is behind the snapshot. Idempotent.
	Delete(ctx context.Context, s Snapshot) error
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key     string    `json:"key"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// ObjectStore keeps archive objects. A Put that fails or is interrupted leaves no object under
// the key. Missing objects give ErrNotFound. Every implementation passes engine/objectstoretest.
type ObjectStore interface {
	// Put streams r into the object key, never holding it whole in memory.
	Put(ctx context.Context, key string, r io.Reader) (ObjectInfo, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Head(ctx context.Context, key string) (ObjectInfo, error)
	// Delete removes the object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	Describe() string
}

// LeftoverCleaner is offered by object stores (and by Volumes over them) whose interrupted
// writes leave data behind that no object names: the temporary file of a killed Put, an S3
// multipart upload never completed. The purge sweep calls it.
type LeftoverCleaner interface {
	// RemoveLeftovers removes what writes that can no longer finish left behind: those of a
	// writer known to be dead, and those untouched since before cutoff.
	RemoveLeftovers(ctx context.Context, cutoff time.Time) (Leftovers, error)
}

// Leftovers counts what RemoveLeftovers removed.
type Leftovers struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// WriteWatcher is offered by stores that can tell when any process wrote to them without
// being read (SQLite: the kernel's notice of a write to its files). A console waits on it
// instead of reading the store on a timer, so it does no work while nothing changes.
type WriteWatcher interface {
	// WatchWrites sends after writes, coalesced: one send may stand for many writes, and a
	// send may come for a write that changed nothing a reader sees. The channel closes when
	// ctx ends or the watch stops working; the reader then has to go back to asking.
	WatchWrites(ctx context.Context) (<-chan struct{}, error)
}

// Notifier carries status events between engines (processes) sharing a store.
type Notifier interface {
	Publish(ctx context.Context, e Event) error
	// Subscribe delivers events until ctx ends; the channel is closed then.
	Subscribe(ctx context.Context) (<-chan Event, error)
}

// Clock is injected so sweeps and retention are testable without sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// ProgressFunc receives progress reports; it must be quick and safe for concurrent use.
type ProgressFunc func(Progress)

// Preflighter is offered by Volumes that can tell, before a hibernation touches a project,
// whether a snapshot of it can be taken at all (kubernetes: the snapshot class exists and is
// of the volume's driver, the rights are there). A hibernation that would fail on it is refused
// with nothing stopped, instead of after the containers were stopped and a timeout waited out.
type Preflighter interface {
	Preflight(ctx context.Context, p Project) error
}
