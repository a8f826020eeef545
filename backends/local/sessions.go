package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// sessionRecord is what a terminal exec leaves in <RunDir>/<slug>/.sessions/<sid>.json while
// its session may hold processes: the shell's nohup'd and background ones are in no
// container's process group, so without it nothing would stop them with the project, and they
// would run on in a hibernated project's deleted tree. The dot keeps it out of containerNames.
type sessionRecord struct {
	// SID is the session's id, its leader's pid; StartTicks the leader's start time, so a pid
	// reused once the whole session is gone is not taken for it.
	SID        int    `json:"sid"`
	StartTicks uint64 `json:"start_ticks"`
	Container  string `json:"container"`
	// Owner is the process running the exec (engine.ProcessOwner). A record whose owner is
	// dead is a session its client could not end (killed with SIGKILL): it is ended by the
	// next terminal exec or stop of the project. Empty once the exec returned and left
	// processes in the session on purpose (a nohup'd server, as docker exec leaves one in
	// the container): those run until the project stops.
	Owner string `json:"owner,omitempty"`
}

func (r *Runtime) sessionsDir(slug string) string { return filepath.Join(r.runDir(slug), ".sessions") }
func (r *Runtime) sessionPath(slug string, sid int) string {
	return filepath.Join(r.sessionsDir(slug), strconv.Itoa(sid)+".json")
}

func (r *Runtime) writeSession(slug string, rec sessionRecord) error {
	if err := os.MkdirAll(r.sessionsDir(slug), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return hostfs.WriteFileAtomic(r.sessionPath(slug, rec.SID), append(b, '\n'), 0o600)
}

// sessionReturned settles the record of a terminal exec that returned: gone with its session,
// or kept without an owner while processes the command left there still run.
func (r *Runtime) sessionReturned(slug string, rec sessionRecord) {
	if sessionAlive(rec.SID, rec.StartTicks) {
		rec.Owner = ""
		if r.writeSession(slug, rec) == nil {
			return
		}
	}
	_ = os.Remove(r.sessionPath(slug, rec.SID))
}

// endSessions kills every process of the project's recorded terminal sessions (only those
// whose client died without ending them, when orphans) and drops their records.
func (r *Runtime) endSessions(slug string, orphans bool) error {
	ents, err := os.ReadDir(r.sessionsDir(slug))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list terminal sessions: %w", err)
	}
	var errs []error
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(r.sessionsDir(slug), e.Name())
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // its exec just settled it
		}
		var rec sessionRecord
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("terminal session record %s: %w", path, err))
			continue
		}
		if orphans && (rec.Owner == "" || !engine.OwnerDead(rec.Owner)) {
			continue
		}
		if sessionAlive(rec.SID, rec.StartTicks) {
			killSession(rec.SID)
			if sessionAlive(rec.SID, rec.StartTicks) {
				// Kept, so the next stop tries again.
				errs = append(errs, fmt.Errorf("terminal session %d of %s: processes survived SIGKILL", rec.SID, rec.Container))
				continue
			}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
