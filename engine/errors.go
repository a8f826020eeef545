package engine

import "errors"

// Sentinel errors; backends wrap them so callers can test with errors.Is.
var (
	ErrNotFound     = errors.New("not found")
	ErrExists       = errors.New("already exists")
	ErrConflict     = errors.New("conflict: state changed underneath")
	ErrBusy         = errors.New("busy: another operation holds the project")
	ErrBadState     = errors.New("not allowed in this state")
	ErrTimelineFull = errors.New("timeline full")
	ErrBadPath      = errors.New("path not allowed")
	ErrBadInput     = errors.New("invalid input")
	ErrChecksum     = errors.New("checksum mismatch")
	ErrReadOnly     = errors.New("read-only mode")
	// ErrNotAvailable: the runtime cannot give what was asked at all (no metrics API in the
	// cluster), as opposed to a failure of one call.
	ErrNotAvailable = errors.New("not available")
	// ErrSuperseded: the operation's hold moved to a newer epoch (another process took the
	// operation over while this one was paused or cut off). Its holder must stop at once and
	// touch nothing: whatever it would do now, the taker already did or undid.
	ErrSuperseded = errors.New("superseded: another process took this operation over")
)
