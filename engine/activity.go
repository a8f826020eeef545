package engine

import (
	"context"
	"fmt"
	"time"
	"unicode"
)

// Activity is one touch of a project: when, through which door (Source) and by whom (Actor).
// The store keeps the newest one beside the project, so "why is this project awake" has an
// answer: an older touch reported late moves neither the time nor the source back.
type Activity struct {
	At     time.Time
	Source string
	Actor  string
}

// The doors activity comes through today. A platform names its own with `project touch --source`.
const (
	SourceCreate    = "create"
	SourceStart     = "start"
	SourceWake      = "wake"
	SourceRestore   = "restore"
	SourceUndelete  = "undelete"
	SourceFiles     = "files"
	SourceExec      = "exec"
	SourceTerminal  = "terminal"
	SourceGit       = "git"
	SourceContainer = "container"
	SourceTouch     = "touch"
	SourceKeepAlive = "keep-alive"
)

// maxSourceLen keeps a source a word a column can show, not a message.
const maxSourceLen = 32

// CheckSource refuses a source that is empty, long or not printable: it is shown in lists and
// descriptions as it is, so it must not carry control characters or spaces that break columns.
func CheckSource(s string) error {
	if s == "" || len(s) > maxSourceLen {
		return fmt.Errorf("activity source %q: want 1 to %d characters: %w", s, maxSourceLen, ErrBadInput)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("activity source %q: only printable characters without spaces: %w", s, ErrBadInput)
		}
	}
	return nil
}

// activity is a touch of this engine's now, by this process.
func (e *Engine) activity(source string) Activity {
	return Activity{At: e.now(), Source: source, Actor: e.cfg.Owner}
}

// touch records activity and only logs when it cannot: the operation that touched has done its
// work, and failing it for the record would undo none of it.
func (e *Engine) touch(ctx context.Context, p Project, source string) {
	if err := e.store.Touch(ctx, p.ID, e.activity(source)); err != nil {
		e.log.Warn("record activity", "project", p.Slug, "source", source, "err", err)
	}
}
