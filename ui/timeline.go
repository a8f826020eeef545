package ui

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// timelineKeys are the Timeline pane's action keys; the table has the navigation keys.
type timelineKeys struct {
	Create   key.Binding
	Restore  key.Binding
	Relabel  key.Binding
	Delete   key.Binding
	Undelete key.Binding
	Deleted  key.Binding
}

// timelinePane is one project's snapshot timeline: its manual snapshots (at most
// engine.MaxManualSnapshots) and the ones the engine made (hibernation, safety), newest first.
type timelinePane struct {
	tablePane[engine.Snapshot]
	proj       engine.Project
	containers []engine.ContainerView
	// undo is the safety snapshot the last restore made here: pointed out in the list, since
	// restoring it is how that restore is undone.
	undo string
	// showDeleted lists the deleted snapshots too (kept for the retention period), which
	// undelete brings back.
	showDeleted bool
}

var timelineColumns = []column{
	{title: "LABEL", min: 12},
	{title: "TYPE", min: 11, max: 11},
	{title: "STATE", min: 7, max: 7},
	{title: "CREATED", min: 11, max: 11},
	{title: "AGE", min: 8, max: 8, drop: 2},
	{title: "SIZE", min: 9, max: 9, drop: 1},
	{title: "ID", min: 34, max: 40, drop: 3},
}

func newTimelinePane(e *env, p engine.Project) *timelinePane {
	t := &timelinePane{proj: p}
	t.tablePane = tablePane[engine.Snapshot]{
		env:      e,
		navKeys:  newNavKeys(),
		filter:   newFilterBox(e),
		noun:     "snapshot",
		cols:     timelineColumns,
		rowID:    func(s engine.Snapshot) string { return s.ID },
		rowCells: t.cells,
		empty:    t.emptyText,
		waiting:  "loading the timeline…",
	}
	k := timelineKeys{
		Create:   key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "create")),
		Restore:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "restore")),
		Relabel:  key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "relabel")),
		Delete:   key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "delete")),
		Undelete: key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "undelete")),
		Deleted:  key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "show deleted")),
	}
	t.actions = newActions(e.readOnly,
		action{key: k.Create, mutates: true, why: t.whyCreate, do: t.create},
		action{key: k.Restore, mutates: true, why: t.whyRestore, do: t.restore},
		action{key: k.Relabel, mutates: true, why: t.whyRelabel, do: t.relabel},
		action{key: k.Delete, mutates: true, why: t.whyDelete, do: t.remove},
		action{key: k.Undelete, mutates: true, why: t.whyUndelete, do: t.undelete},
		action{key: k.Deleted, do: t.toggleDeleted, label: func() string {
			if t.showDeleted {
				return "hide deleted"
			}
			return "show deleted"
		}},
	)
	return t
}

func (t *timelinePane) kind() paneKind                  { return kindTimeline }
func (t *timelinePane) crumb() string                   { return t.proj.Slug + " › Timeline" }
func (t *timelinePane) open() tea.Cmd                   { return t.load() }
func (t *timelinePane) project() (engine.Project, bool) { return t.proj, true }

// manual counts the snapshots that take a timeline slot.
func (t *timelinePane) manual() []engine.Snapshot {
	var out []engine.Snapshot
	for _, s := range t.rows {
		if s.Type == engine.SnapshotManual && s.Status != engine.SnapshotDeleted {
			out = append(out, s)
		}
	}
	return out
}

func (t *timelinePane) info() string {
	if !t.loaded {
		if t.gate.loading {
			return "loading…"
		}
		return ""
	}
	shown := ""
	if t.showDeleted {
		shown = "  deleted shown (a hides)"
	}
	return fmt.Sprintf("manual %d/%d  %s  %s%s", len(t.manual()), engine.MaxManualSnapshots,
		t.count("snapshot"), t.proj.Status, shown)
}

// timelineLoadedMsg answers a load of the timeline and of the project it belongs to.
type timelineLoadedMsg struct {
	to         *timelinePane
	project    engine.Project
	containers []engine.ContainerView
	snaps      []engine.Snapshot
	err        error
}

func (m timelineLoadedMsg) target() pane     { return m.to }
func (m timelineLoadedMsg) deliver() tea.Cmd { return m.to.apply(m) }

func (t *timelinePane) load() tea.Cmd {
	src, id, all := t.env.src, t.proj.ID, t.showDeleted
	return t.gate.load(t.env.ctx, func(ctx context.Context) tea.Msg {
		p, cs, err := src.Containers(ctx, id)
		if err != nil {
			return timelineLoadedMsg{to: t, err: err}
		}
		snaps, err := src.Snapshots(ctx, id, all)
		return timelineLoadedMsg{to: t, project: p, containers: cs, snaps: snaps, err: err}
	})
}

func (t *timelinePane) apply(msg timelineLoadedMsg) tea.Cmd {
	var cmds []tea.Cmd
	if msg.err == nil {
		t.proj, t.containers = msg.project, msg.containers
	} else {
		cmds = append(cmds, msgCmd(errMsg{err: fmt.Errorf("timeline of %s: %w", t.proj.Slug, msg.err)}))
	}
	t.set(msg.snaps, msg.err)
	if t.gate.done() {
		cmds = append(cmds, t.load())
	}
	return tea.Batch(cmds...)
}

func (t *timelinePane) refresh(force bool, changed map[string]bool) tea.Cmd {
	if force || changed[t.proj.ID] {
		return t.load()
	}
	return nil
}

func (t *timelinePane) emptyText() string {
	if t.whyCreate() == "" {
		return "no snapshots yet — c takes one"
	}
	return "no snapshots yet"
}

func (t *timelinePane) cells(s engine.Snapshot) []cell {
	th := &t.env.theme
	var label cell
	// The marks go first: a long label would cut them off at the end.
	switch {
	case s.ID == t.undo:
		label = cell{{text: "[undo] ", style: &th.Hint}}
	case s.ID == t.proj.HibernationSnapshot && t.proj.Status != engine.StatusActive:
		label = cell{{text: "[wakes] ", style: &th.Muted}}
	}
	if s.Label == "" {
		label = append(label, seg{text: "(no label)", style: &th.Muted})
	} else {
		label = append(label, seg{text: s.Label, style: &th.Value})
	}
	state := txt(string(s.Status), th.Snapshot(s.Status))
	size := txt("-", &th.Muted)
	if total := s.TotalBytes(); total > 0 {
		// With the service volumes it holds besides the files; the dialogs name them.
		size = txt(bytesText(total), &th.Value)
	} else if c := s.TotalCapacity(); c > 0 {
		// A CSI driver tells the volume a restore needs, not the data: not shown as data.
		size = txt(bytesText(c)+" vol", &th.Muted)
	}
	return []cell{
		label,
		txt(string(s.Type), &th.Value),
		state,
		txt(s.CreatedAt.In(t.env.loc).Format("01-02 15:04"), &th.Value),
		txt(ago(t.env.now, s.CreatedAt), &th.Muted),
		size,
		txt(s.ID, &th.Muted),
	}
}

// describeSnapshot is a snapshot in one line, for dialogs.
func (t *timelinePane) describeSnapshot(s engine.Snapshot) string {
	label := s.Label
	if label == "" {
		label = s.ID
	}
	parts := []string{string(s.Type), string(s.Status)}
	if s.TotalBytes() > 0 {
		parts = append(parts, bytesText(s.TotalBytes()))
	} else if c := s.TotalCapacity(); c > 0 {
		parts = append(parts, "data size unknown, restores into "+bytesText(c)+" of volume")
	}
	if len(s.Parts) > 0 && s.TotalBytes() > 0 {
		held := []string{"files " + bytesText(s.SizeBytes)}
		for _, pt := range s.Parts {
			held = append(held, pt.Name+" "+bytesText(pt.SizeBytes))
		}
		parts = append(parts, "holding "+strings.Join(held, " + "))
	}
	parts = append(parts, "taken "+s.CreatedAt.In(t.env.loc).Format("2006-01-02 15:04")+" ("+ago(t.env.now, s.CreatedAt)+")")
	return "“" + label + "” — " + strings.Join(parts, ", ")
}

// timelineFullMsg asks the timeline to offer replacing a snapshot for a new one.
type timelineFullMsg struct {
	to    *timelinePane
	label string
}

func (m timelineFullMsg) target() pane { return m.to }
func (m timelineFullMsg) deliver() tea.Cmd {
	return tea.Batch(m.to.load(), msgCmd(openDialogMsg{d: m.to.replaceDialog(m.label)}))
}

// stray points the way when the operator left the timeline meanwhile: the offer would pop up
// out of place.
func (m timelineFullMsg) stray() tea.Cmd {
	return hintCmd(fmt.Sprintf("the timeline of %s is full; open it (t) and create again to replace one", m.to.proj.Slug))
}

// restoredMsg points the timeline at the safety snapshot a restore made.
type restoredMsg struct {
	to     *timelinePane
	safety string
}

func (m restoredMsg) target() pane { return m.to }
func (m restoredMsg) deliver() tea.Cmd {
	m.to.undo = m.safety
	return nil
}
