// Package sqlstore holds what the SQL stores (backends/sqlite, backends/postgres) share apart
// from their drivers: the checks of the Store contract's inputs, the rules around the rows, and
// the errors they refuse with, so that both refuse the same things in the same words. The SQL
// and the driver calls stay with each store.
package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// NewProject checks a project to create, filling in the default status (active).
func NewProject(p engine.Project) (engine.Project, error) {
	if p.ID == "" || p.Slug == "" {
		return p, fmt.Errorf("create project: %w: id and slug are required", engine.ErrBadInput)
	}
	if p.Status == "" {
		p.Status = engine.StatusActive
	}
	return p, nil
}

// ProjectExists is the refusal of a project whose id, or whose slug when slugTaken, a live
// project already has.
func ProjectExists(p engine.Project, slugTaken bool) error {
	what := "id " + p.ID
	if slugTaken {
		what = fmt.Sprintf("slug %q", p.Slug)
	}
	return fmt.Errorf("%w: %s is in use", engine.ErrExists, what)
}

// PutChildren stores a new project's containers and connections with the store's own put
// functions, in tx (the transaction that created the project), each bound to projectID.
func PutChildren[Tx any](ctx context.Context, tx Tx, projectID string, cs []engine.Container, conns []engine.Connection,
	putContainer func(context.Context, Tx, engine.Container) error, putConnection func(context.Context, Tx, engine.Connection) error) error {
	for _, c := range cs {
		c.ProjectID = projectID
		if err := putContainer(ctx, tx, c); err != nil {
			return fmt.Errorf("container %s: %w", c.Name, err)
		}
	}
	for _, c := range conns {
		c.ProjectID = projectID
		if err := putConnection(ctx, tx, c); err != nil {
			return fmt.Errorf("connection %s -> %s: %w", c.From, c.To, err)
		}
	}
	return nil
}

// Found is the answer of a lookup of one row, the what with key: v, or engine.ErrNotFound when
// the query found no row (noRows is the driver's error for that), or err; both say what was
// looked up.
func Found[T any](v T, err, noRows error, what, key string) (T, error) {
	if err == nil {
		return v, nil
	}
	if errors.Is(err, noRows) {
		err = engine.ErrNotFound
	}
	var zero T
	return zero, fmt.Errorf("get %s %s: %w", what, key, err)
}

// InsertRefused is what an insert of a row (an op, a snapshot) that belongs to project projectID
// says when the database refused it: its id (of a what) already in use (unique), the project not
// there (foreignKey); any other err as it is.
func InsertRefused(err error, unique, foreignKey bool, what, projectID string) error {
	switch {
	case unique:
		return fmt.Errorf("%w: %s id is in use", engine.ErrExists, what)
	case foreignKey:
		return fmt.Errorf("project %s: %w", projectID, engine.ErrNotFound)
	}
	return err
}

// NewSnapshot checks a snapshot to insert and returns the manual-snapshot limit that applies:
// maxManual, or engine.MaxManualSnapshots when maxManual <= 0.
func NewSnapshot(snap engine.Snapshot, maxManual int) (int, error) {
	if snap.ID == "" || snap.ProjectID == "" {
		return 0, fmt.Errorf("insert snapshot: %w: id and project id are required", engine.ErrBadInput)
	}
	if maxManual <= 0 {
		maxManual = engine.MaxManualSnapshots
	}
	return maxManual, nil
}

// OnTimeline reports whether inserting snap counts against the manual-snapshot limit: a live
// manual snapshot. The engine's own snapshots are never refused.
func OnTimeline(snap engine.Snapshot) bool {
	return snap.Type == engine.SnapshotManual && snap.Status != engine.SnapshotDeleted
}

// TimelineFull refuses one more manual snapshot of the project slug, which has n, when n has
// reached maxManual; below it, nil.
func TimelineFull(slug string, n, maxManual int) error {
	if n < maxManual {
		return nil
	}
	return fmt.Errorf("%w: project %s already has %d manual snapshots (the limit is %d); "+
		"delete one (sailtui snapshot rm %s ID) or relabel/replace it",
		engine.ErrTimelineFull, slug, n, maxManual, slug)
}

// Undeletable says why snap cannot be undeleted (nil when it can): it must be soft-deleted
// after deletedAfter, and not a failed attempt (whose data was removed when it failed).
func Undeletable(snap engine.Snapshot, deletedAfter time.Time) error {
	switch {
	case snap.Status != engine.SnapshotDeleted:
		return fmt.Errorf("%w: snapshot %s is %s, not deleted", engine.ErrConflict, snap.ID, snap.Status)
	case snap.Error != "":
		return fmt.Errorf("%w: snapshot %s failed (%s) and has no data to bring back", engine.ErrConflict, snap.ID, snap.Error)
	case !snap.DeletedAt.After(deletedAfter):
		return fmt.Errorf("%w: snapshot %s was deleted %s, past its retention: the purge may already be removing it",
			engine.ErrConflict, snap.ID, snap.DeletedAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// TryLock is the TryLock of both stores around their own upsert: the arguments are checked
// first, and a failure of upsert says what lock was asked for whom. upsert reports whether
// owner holds the lock now.
func TryLock(name, owner string, ttl time.Duration, upsert func() (bool, error)) (bool, error) {
	if name == "" || owner == "" || ttl <= 0 {
		return false, fmt.Errorf("lock %q: %w: name, owner and a positive ttl are required", name, engine.ErrBadInput)
	}
	ok, err := upsert()
	if err != nil {
		return false, fmt.Errorf("lock %q for %s: %w", name, owner, err)
	}
	return ok, nil
}

// TakeOverLock is the TakeOverLock of both stores around their own update: the arguments are
// checked first, and a failure of update says what lock was moved from whom to whom. update
// reports whether the lock moved.
func TakeOverLock(name, from, owner string, ttl time.Duration, update func() (bool, error)) (bool, error) {
	if name == "" || from == "" || owner == "" || ttl <= 0 {
		return false, fmt.Errorf("take over lock %q: %w: name, holders and a positive ttl are required", name, engine.ErrBadInput)
	}
	ok, err := update()
	if err != nil {
		return false, fmt.Errorf("take over lock %q from %s for %s: %w", name, from, owner, err)
	}
	return ok, nil
}

// NotHeld explains a conditional update of project p that matched nothing although p exists:
// it is not in the expected state (ErrConflict), with what it is instead.
func NotHeld(p engine.Project) error {
	holder := "nobody"
	if p.OpID != "" {
		holder = fmt.Sprintf("%s %s (owner %q)", p.OpKind, p.OpID, p.OpOwner)
	}
	return fmt.Errorf("%w: project is %s, held by %s, last active %s", engine.ErrConflict,
		p.Status, holder, p.LastActivity.Format("2006-01-02T15:04:05.000000Z07:00"))
}

// Superseded is the refusal of a write fenced by h on project p, which h no longer holds: the
// operation was taken over (a newer epoch) or finished by its taker. Wraps ErrSuperseded and,
// for callers that only know the older word, ErrConflict.
func Superseded(p engine.Project, h engine.Hold) error {
	holder := "nobody"
	if p.OpID != "" {
		holder = fmt.Sprintf("%s %s at epoch %d (owner %q)", p.OpKind, p.OpID, p.OpEpoch, p.OpOwner)
	}
	return fmt.Errorf("%w (%w): op %s at epoch %d no longer holds project %s; it is %s, held by %s",
		engine.ErrSuperseded, engine.ErrConflict, h.OpID, h.Epoch, p.Slug, p.Status, holder)
}

// OpSuperseded is the refusal of a journal write of op, whose entry a takeover moved to epoch.
func OpSuperseded(op engine.Operation, epoch int64) error {
	return fmt.Errorf("%w (%w): journal entry %s is at epoch %d, this writer holds epoch %d",
		engine.ErrSuperseded, engine.ErrConflict, op.ID, epoch, op.Epoch)
}

// CheckHold is the fenced read of a write by h: nil while h holds p, else Superseded. A zero h
// is a write of no operation, never refused here.
func CheckHold(p engine.Project, h engine.Hold) error {
	if h.OpID == "" || (p.OpID == h.OpID && p.OpEpoch == h.Epoch) {
		return nil
	}
	return Superseded(p, h)
}

// NewUse checks a use to begin.
func NewUse(u engine.Use) error {
	if u.ID == "" || u.ProjectID == "" {
		return fmt.Errorf("begin use: %w: id and project are required", engine.ErrBadInput)
	}
	return nil
}

// containerSpec is what a container row keeps in its spec column: the fields of services and
// of .tesslate/config.json, as one JSON object, so a new one needs no migration of both stores.
type containerSpec struct {
	Image     string            `json:"image,omitempty"`
	DataPath  string            `json:"data_path,omitempty"`
	Exports   map[string]string `json:"exports,omitempty"`
	Resources engine.Resources  `json:"resources,omitzero"`
	Primary   bool              `json:"primary,omitempty"`
	Endpoint  string            `json:"endpoint,omitempty"`
	// OwnCommand rides here rather than in a column of its own: see engine.Container.
	OwnCommand bool `json:"own_command,omitempty"`
}

// ContainerSpec is c's spec column ("" when it has none of those fields).
func ContainerSpec(c engine.Container) string {
	s := containerSpec{Image: c.Image, DataPath: c.DataPath, Exports: c.Exports, Resources: c.Resources,
		Primary: c.Primary, Endpoint: c.Endpoint, OwnCommand: c.OwnCommand}
	if s.Image == "" && s.DataPath == "" && len(s.Exports) == 0 && s.Resources.IsZero() && !s.Primary && s.Endpoint == "" && !s.OwnCommand {
		return ""
	}
	b, _ := json.Marshal(s) // strings, a map of strings and a bool: cannot fail
	return string(b)
}

// SetContainerSpec fills c from a spec column.
func SetContainerSpec(c *engine.Container, col string) error {
	if col == "" {
		return nil
	}
	var s containerSpec
	if err := json.Unmarshal([]byte(col), &s); err != nil {
		return fmt.Errorf("container %s: spec: %w", c.Name, err)
	}
	c.Image, c.DataPath, c.Exports, c.Resources, c.Primary, c.Endpoint = s.Image, s.DataPath, s.Exports, s.Resources, s.Primary, s.Endpoint
	c.OwnCommand = s.OwnCommand
	return nil
}

// SnapshotParts is a snapshot's parts column ("" when it has none).
func SnapshotParts(s engine.Snapshot) string {
	if len(s.Parts) == 0 {
		return ""
	}
	b, _ := json.Marshal(s.Parts)
	return string(b)
}

// SetSnapshotParts fills s.Parts from a parts column.
func SetSnapshotParts(s *engine.Snapshot, col string) error {
	if col == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(col), &s.Parts); err != nil {
		return fmt.Errorf("snapshot %s: parts: %w", s.ID, err)
	}
	return nil
}
