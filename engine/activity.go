package engine

import (
	"context"
	"fmt"
	"slices"
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

// KeepAlive keeps the idle sweep off project ref for d from now, at most MaxKeepAlive: what a
// user asks for before leaving a job running unattended. It counts as activity too (source
// keep-alive), so the project's idle time starts again when it ends. A later keep-alive
// replaces the earlier one, shorter or longer.
func (e *Engine) KeepAlive(ctx context.Context, ref string, d time.Duration) (Project, error) {
	if d <= 0 {
		return Project{}, fmt.Errorf("keep %s alive: want a positive duration, not %s: %w", ref, d, ErrBadInput)
	}
	if d > e.cfg.MaxKeepAlive {
		return Project{}, fmt.Errorf("keep %s alive for %s: longer than the most allowed, %s (SAILTUI_MAX_KEEP_ALIVE): %w", ref, d, e.cfg.MaxKeepAlive, ErrBadInput)
	}
	return e.setKeepAlive(ctx, ref, "keep alive", func(a Activity) (time.Time, Activity) { return a.At.Add(d), a })
}

// CancelKeepAlive ends project ref's keep-alive: the idle sweep judges it by its activity again.
// Cancelling is not activity: a project left idle under a keep-alive may be hibernated at once.
func (e *Engine) CancelKeepAlive(ctx context.Context, ref string) (Project, error) {
	return e.setKeepAlive(ctx, ref, "cancel keep-alive", func(Activity) (time.Time, Activity) { return time.Time{}, Activity{} })
}

// setKeepAlive stores what set makes of a keep-alive activity now: the end and the activity to record.
func (e *Engine) setKeepAlive(ctx context.Context, ref, what string, set func(Activity) (time.Time, Activity)) (Project, error) {
	if err := e.writable(what + " " + ref); err != nil {
		return Project{}, err
	}
	p, err := e.liveProject(ctx, ref)
	if err != nil {
		return p, err
	}
	until, a := set(e.activity(SourceKeepAlive))
	p, err = e.store.SetKeepAlive(ctx, p.ID, until, a)
	if err != nil {
		return p, fmt.Errorf("%s %s: %w", what, ref, err)
	}
	return p, nil
}

// MaxKeepAlive is the longest keep-alive KeepAlive accepts.
func (e *Engine) MaxKeepAlive() time.Duration { return e.cfg.MaxKeepAlive }

// ActivityQuiet is the gap that ends a line of a project's history: touches through one source
// closer together than this are one line ("files, 14:02–14:31, 212 touches"), so the history
// says when and how a project was used without a line per request.
const ActivityQuiet = 5 * time.Minute

// MaxHistory is how many activity and warning lines the store keeps per project; the oldest go.
const MaxHistory = 1000

// History kinds. An operation's line comes from the journal; the others from the history the
// store keeps beside the project.
const (
	HistoryOperation   = "operation"
	HistoryActivity    = "activity"
	HistoryIdleWarning = EventIdleWarning
)

// HistoryEntry is one line of a project's history: an operation, a span of activity through one
// source, or an idle warning.
type HistoryEntry struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	// Until is when an operation finished, or the last touch of an activity line.
	Until  time.Time `json:"until,omitzero"`
	Source string    `json:"source,omitempty"`
	// Actor is who: the operation's holder, the newest toucher of an activity line.
	Actor string `json:"actor,omitempty"`
	// Count is how many touches an activity line stands for.
	Count int `json:"count,omitempty"`
	// Op, Outcome and Error describe an operation.
	Op      OpKind  `json:"op,omitempty"`
	Outcome OpState `json:"outcome,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// History answers "why is this project awake, asleep or about to sleep": its operations (who,
// from where, start, end, outcome, error), the activity that kept it up (one line per source
// per quiet spell) and the sweep's warnings, newest first, at most limit lines (0: 200).
func (e *Engine) History(ctx context.Context, ref string, limit int) (Project, []HistoryEntry, error) {
	if limit <= 0 {
		limit = 200
	}
	p, err := e.Project(ctx, ref)
	if err != nil {
		return Project{}, nil, err
	}
	ops, err := e.store.ListOps(ctx, p.ID, limit)
	if err != nil {
		return p, nil, fmt.Errorf("history of %s: %w", p.Slug, err)
	}
	lines, err := e.store.ListHistory(ctx, p.ID, limit)
	if err != nil {
		return p, nil, fmt.Errorf("history of %s: %w", p.Slug, err)
	}
	for _, o := range ops {
		lines = append(lines, HistoryEntry{Kind: HistoryOperation, At: o.StartedAt, Until: o.FinishedAt, Actor: o.Owner,
			Op: o.Kind, Outcome: o.State, Error: o.Error})
	}
	// Newest first by when each began; an activity line that is still going sorts by its start
	// too, so the history reads as a sequence of beginnings.
	slices.SortStableFunc(lines, func(a, b HistoryEntry) int { return b.At.Compare(a.At) })
	if len(lines) > limit {
		lines = lines[:limit]
	}
	return p, lines, nil
}

// What names the line for people: the operation, the door of the activity, or the warning.
func (h HistoryEntry) What() string {
	switch h.Kind {
	case HistoryOperation:
		return string(h.Op)
	case HistoryActivity:
		return "activity · " + h.Source
	case HistoryIdleWarning:
		return "idle warning"
	}
	return h.Kind
}

// Detail is the rest of the line for people: an operation's outcome and error, how many
// touches an activity line stands for, what a warning means.
func (h HistoryEntry) Detail() string {
	switch h.Kind {
	case HistoryOperation:
		if h.Error != "" {
			return string(h.Outcome) + ": " + h.Error
		}
		return string(h.Outcome)
	case HistoryActivity:
		if h.Count == 1 {
			return "1 touch"
		}
		return fmt.Sprintf("%d touches", h.Count)
	case HistoryIdleWarning:
		return "will be hibernated unless used"
	}
	return ""
}

// When is the line's time on loc's clock, with its end when it is a span.
func (h HistoryEntry) When(loc *time.Location) string {
	at := h.At.In(loc)
	when := at.Format("2006-01-02 15:04:05")
	if !h.Until.IsZero() && !h.Until.Truncate(time.Second).Equal(h.At.Truncate(time.Second)) {
		end := h.Until.In(loc)
		if end.YearDay() == at.YearDay() && end.Year() == at.Year() {
			return when + "–" + end.Format("15:04:05")
		}
		return when + " – " + end.Format("2006-01-02 15:04:05")
	}
	return when
}
