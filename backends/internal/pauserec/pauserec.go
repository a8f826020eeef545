// Package pauserec holds the pause record of the runtimes that freeze a project's containers
// themselves for a snapshot (local, docker): a file written before the first container is
// frozen and removed once all run again, which says whose pause it is, so that a sailtui that
// comes after one that died mid-snapshot knows the pause for a leftover to undo. What was
// frozen, and how to undo it, is each runtime's own.
package pauserec

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/hostfs"
)

// Hold is whose pause a record is; a runtime's record embeds it beside what it froze.
type Hold struct {
	// Owner is engine.ProcessOwner() of the process that paused; Token tells its pauses apart.
	Owner string    `json:"owner"`
	Token string    `json:"token"`
	At    time.Time `json:"at"`
}

// held holds the tokens of the pauses this process has not resumed yet: a record naming this
// process with another token is one whose resume could not remove it.
var held sync.Map

// Take is a new hold of this process, in progress until Release: taken before the record is
// written, so that a status read in this process never takes the record for a leftover.
func Take() Hold {
	h := Hold{Owner: engine.ProcessOwner(), Token: rand.Text(), At: time.Now().UTC()}
	held.Store(h.Token, true)
	return h
}

// Release ends the hold for this process, resumed or not: a record of it left behind is from
// then on a leftover that the next look at the project undoes.
func (h Hold) Release() { held.Delete(h.Token) }

// Live reports whether the pause is still in progress: its owner runs and, when that is this
// process, has not released it.
func (h Hold) Live() bool {
	if h.Owner == engine.ProcessOwner() {
		_, ok := held.Load(h.Token)
		return ok
	}
	return !engine.OwnerDead(h.Owner)
}

// Busy is the refusal of a pause of a project that h holds.
func (h Hold) Busy() error {
	return fmt.Errorf("its containers are already paused by %s since %s: %w",
		h.Owner, h.At.Format(time.RFC3339), engine.ErrBusy)
}

// Detail is what a status says of a container that h holds.
func (h Hold) Detail() string {
	return "paused for a snapshot since " + h.At.Local().Format("15:04:05")
}

// NoResume is the resume of a pause that froze nothing.
func NoResume(context.Context) error { return nil }

// Write records st at path, atomically. Its directory is the runtime's to make: one that is
// gone (a project destroyed meanwhile) fails the pause rather than come back.
func Write(path string, st any) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = hostfs.WriteFileAtomic(path, append(b, '\n'), 0o600)
	}
	if err != nil {
		return fmt.Errorf("record pause: %w", err)
	}
	return nil
}

// Read reads the record at path: nil when there is none.
func Read[T any](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pause record: %w", err)
	}
	var st T
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("pause record %s: %w", path, err)
	}
	return &st, nil
}

// Remove removes the record at path; none there is not an error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove pause record: %w", err)
	}
	return nil
}
