package ui

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sailtui/sailtui/engine"
)

// eventsState is the state of the notifier subscription, shown so that a console that stopped
// hearing events says so instead of quietly going stale.
type eventsState int

const (
	eventsConnecting eventsState = iota
	eventsLive
	eventsDown
)

// headerLines is how many lines the header takes.
const headerLines = 2

// header is the top bar: where the console is connected, and the fleet at a glance.
type header struct {
	env         *env
	mode, store string
	readOnly    bool
	w           int

	events   eventsState
	loadedAt time.Time
	// storeErr is why the last read of the projects list failed ("" once one succeeds), and
	// staleSince when the list was last known current before it: events may still arrive
	// (PostgreSQL's LISTEN is another connection, the in-process bus needs no store), so
	// "live" alone would claim a list the store no longer answers for.
	storeErr   string
	staleSince time.Time
	// checked is when the watcher last found the store unchanged (Unix nanoseconds; nil or
	// 0: never): the list is as fresh as that.
	checked *atomic.Int64
	// current is held while a watcher waits on the store's notices of writes, having read it
	// since the last: the list is current now.
	current *currentFlag
}

// refreshed is when the list was last known to be current.
func (h *header) refreshed() time.Time {
	if h.current.held() {
		return h.env.now
	}
	t := h.loadedAt
	if h.checked != nil {
		if ns := h.checked.Load(); ns != 0 {
			if c := time.Unix(0, ns); c.After(t) {
				t = c
			}
		}
	}
	return t
}

func (h *header) setSize(w int) { h.w = w }

// storeFailed notes a failed read of the projects list; the first of a run fixes since when
// the list is stale.
func (h *header) storeFailed(err error) {
	if h.storeErr == "" {
		h.staleSince = h.refreshed()
		if h.staleSince.IsZero() {
			h.staleSince = h.env.now
		}
	}
	h.storeErr = err.Error()
}

// storeAnswered notes a read that succeeded: the list is current again.
func (h *header) storeAnswered() { h.storeErr, h.staleSince = "", time.Time{} }

// storeErrWidth caps the store's error in the header; the status line has all of it.
const storeErrWidth = 60

// countOrder is the order of the per-state counts; deleted is shown only when there are some.
var countOrder = []engine.ProjectStatus{
	engine.StatusActive, engine.StatusHibernating, engine.StatusHibernated,
	engine.StatusRestoring, engine.StatusFailed, engine.StatusDeleted,
}

func (h *header) view(counts map[engine.ProjectStatus]int, loaded bool) string {
	th := &h.env.theme
	var left strings.Builder
	left.WriteString(th.App.Render("sailtui"))
	// The badge comes before mode and store so that a long store name is what gets cut.
	if h.readOnly {
		left.WriteString("  " + th.ReadOnly.Render(" READ-ONLY "))
	}
	if h.mode != "" {
		left.WriteString("  " + th.Label.Render("mode ") + th.Value.Render(sanitize(h.mode)))
	}
	if h.store != "" {
		left.WriteString("  " + th.Label.Render("store ") + th.Value.Render(sanitize(h.store)))
	}
	var state string
	switch {
	case h.storeErr != "":
		// The store outranks the events: a live stream over a list that cannot be read is
		// not live.
		state = th.Stale.Render("● stale since " + h.staleSince.In(h.env.loc).Format("15:04:05") + ": " +
			ansi.Truncate(strings.Join(strings.Fields(sanitize(h.storeErr)), " "), storeErrWidth, "…"))
	case h.events == eventsLive:
		state = th.Live.Render("● live")
	case h.events == eventsDown:
		state = th.Stale.Render("○ events down, polling")
	default:
		state = th.Muted.Render("○ connecting")
	}
	right := state
	if at := h.refreshed(); !at.IsZero() {
		right = th.Muted.Render("refreshed "+ago(h.env.now, at)) + "  " + state
	}
	// The event stream's state outranks the refresh age and the tail of a long store name.
	l1 := spread(left.String(), right, h.w)
	if l1 == left.String() {
		l1 = spread(ansi.Truncate(left.String(), max(h.w-width(state)-2, 0), "…"), state, h.w)
	}

	var l2 string
	if loaded {
		parts := make([]string, 0, len(countOrder)+1)
		total := 0
		for _, n := range counts {
			total += n
		}
		for _, s := range countOrder {
			n := counts[s]
			if s == engine.StatusDeleted && n == 0 {
				continue
			}
			parts = append(parts, th.Status(s).Render(string(s))+" "+th.Value.Render(fmt.Sprint(n)))
		}
		l2 = th.Label.Render(fmt.Sprintf("%d projects: ", total)) + strings.Join(parts, th.Muted.Render("  "))
	}
	return block([]string{l1, l2}, h.w, headerLines)
}

// spread puts right at the right edge of a w-wide line, or drops it when it does not fit.
func spread(left, right string, w int) string {
	lw, rw := width(left), width(right)
	if right == "" || lw+rw+2 > w {
		return left
	}
	return left + strings.Repeat(" ", w-lw-rw) + right
}

// statusLines is how many lines the status bar takes.
const statusLines = 2
