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
	"syscall"

	"github.com/sailtui/sailtui/engine"
)

// sessionRecord is what an exec leaves in <RunDir>/<slug>/.sessions/<id>.json while the
// processes it started may run: a terminal exec's session (the shell's nohup'd and
// background jobs are in groups of their own), or a plain exec's process group. They are in
// no container's group, so without it nothing would stop them with the project, and they
// would run on in a hibernated project's deleted tree. The dot keeps it out of containerNames.
type sessionRecord struct {
	// SID is the session's id (its leader's pid), or the group's id when Group is set;
	// StartTicks the leader's start time, so a pid reused once all of them are gone is not
	// taken for it.
	SID        int    `json:"sid"`
	StartTicks uint64 `json:"start_ticks"`
	Group      bool   `json:"group,omitempty"`
	Container  string `json:"container"`
	// Owner is the process running the exec (engine.ProcessOwner). A record whose owner is
	// dead is one its client could not end (killed with SIGKILL): it is ended by the next
	// exec or stop of the project. Empty once the exec returned and left processes behind on
	// purpose (a nohup'd server, as docker exec leaves one in the container): those run
	// until the project stops.
	Owner string `json:"owner,omitempty"`
}

func (rec sessionRecord) alive() bool {
	if rec.Group {
		return groupAlive(rec.SID, rec.StartTicks)
	}
	return sessionAlive(rec.SID, rec.StartTicks)
}

// kill kills every process of the session or group and waits a moment for them to go.
func (rec sessionRecord) kill() {
	if rec.Group {
		_ = killGroup(rec.SID, syscall.SIGKILL)
		waitGroupGone(rec.SID)
		return
	}
	killSession(rec.SID)
}

func (r *Runtime) sessionsDir(slug string) string { return filepath.Join(r.runDir(slug), ".sessions") }
func (r *Runtime) sessionPath(slug string, sid int) string {
	return filepath.Join(r.sessionsDir(slug), strconv.Itoa(sid)+".json")
}

// writeSession records rec. Renamed into place, so a reader never sees half of it; not
// synced: the processes it names do not outlive the machine either.
func (r *Runtime) writeSession(slug string, rec sessionRecord) error {
	if err := os.MkdirAll(r.sessionsDir(slug), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	path := r.sessionPath(slug, rec.SID)
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// sessionReturned settles the record of an exec that returned: gone with its processes, or
// kept without an owner while processes the command left behind still run.
func (r *Runtime) sessionReturned(slug string, rec sessionRecord) {
	if rec.alive() {
		rec.Owner = ""
		if r.writeSession(slug, rec) == nil {
			return
		}
	}
	_ = os.Remove(r.sessionPath(slug, rec.SID))
}

// endSessions kills every process of the project's recorded exec sessions and groups (only
// those whose client died without ending them, when orphans) and drops their records.
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
			errs = append(errs, fmt.Errorf("exec session record %s: %w", path, err))
			continue
		}
		if orphans && (rec.Owner == "" || !engine.OwnerDead(rec.Owner)) {
			continue
		}
		if rec.alive() {
			rec.kill()
			if rec.alive() {
				// Kept, so the next stop tries again.
				errs = append(errs, fmt.Errorf("processes of an exec in %s (session or group %d) survived SIGKILL", rec.Container, rec.SID))
				continue
			}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
