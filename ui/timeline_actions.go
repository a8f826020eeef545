package ui

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// The Timeline pane's actions. Each why* mirrors what the engine would refuse, so only what
// can work is offered.

func (t *timelinePane) whyCreate() string {
	if why := t.env.busyWhy(t.proj); why != "" {
		return why
	}
	if t.proj.Status != engine.StatusActive {
		return fmt.Sprintf("%s is %s; wake it first", t.proj.Slug, t.proj.Status)
	}
	return ""
}

func (t *timelinePane) full() bool { return len(t.manual()) >= engine.MaxManualSnapshots }

func (t *timelinePane) create() tea.Cmd {
	n := len(t.manual())
	body := []para{{text: fmt.Sprintf("A manual snapshot of all of %s's files. The timeline keeps %d; this one takes slot %d.",
		t.proj.Slug, engine.MaxManualSnapshots, n+1)}}
	if t.full() {
		body = []para{{text: fmt.Sprintf("A manual snapshot of all of %s's files. The timeline is full (%d/%d): you choose one to replace next.",
			t.proj.Slug, n, engine.MaxManualSnapshots)}}
	}
	d := newPrompt(t.env, "New snapshot of "+t.proj.Slug, "create", body, "", "label (optional)", engine.MaxLabelLength,
		func(label string) tea.Cmd {
			if t.full() {
				return msgCmd(openDialogMsg{d: t.replaceDialog(label)})
			}
			return t.createOp(label)
		})
	return msgCmd(openDialogMsg{d: d})
}

func (t *timelinePane) createOp(label string) tea.Cmd {
	src, p := t.env.src, t.proj
	return startOp(opSpec{title: "snapshot " + p.Slug + quoteLabel(label), projectID: p.ID, run: func(ctx context.Context) opResult {
		s, err := src.CreateSnapshot(ctx, p.ID, label)
		if errors.Is(err, engine.ErrTimelineFull) {
			// Filled up since the list was read (another console, the CLI): offer the way out.
			return opResult{then: timelineFullMsg{to: t, label: label}}
		}
		if err != nil {
			return opResult{err: err}
		}
		size := bytesText(s.TotalBytes())
		if s.TotalBytes() == 0 && s.TotalCapacity() > 0 {
			size = bytesText(s.TotalCapacity()) + " of volume"
		}
		return opResult{info: fmt.Sprintf("snapshot “%s” of %s is ready (%s)", s.Label, p.Slug, size)}
	}})
}

// quoteLabel is " “label”" for titles, or nothing for no label.
func quoteLabel(label string) string {
	if label == "" {
		return ""
	}
	return " “" + label + "”"
}

func (t *timelinePane) whyRestore() string {
	s, ok := t.selected()
	if !ok {
		return "no snapshot selected"
	}
	if s.Status == engine.SnapshotDeleted && s.Error == "" {
		return "snapshot is deleted; u brings it back first"
	}
	if s.Status != engine.SnapshotReady {
		return fmt.Sprintf("snapshot is %s, not ready", s.Status)
	}
	if why := t.env.busyWhy(t.proj); why != "" {
		return why
	}
	if t.proj.Status != engine.StatusActive && t.proj.Status != engine.StatusHibernated {
		return fmt.Sprintf("%s is %s", t.proj.Slug, t.proj.Status)
	}
	return ""
}

func (t *timelinePane) restore() tea.Cmd {
	s, _ := t.selected()
	p := t.proj
	running := 0
	for _, c := range t.containers {
		if c.Status.State == engine.ContainerRunning {
			running++
		}
	}
	replaces := fmt.Sprintf("all current files of %s (active; %d/%d containers running, restarted after)", p.Slug, running, len(t.containers))
	undo := "A safety snapshot of the current files is taken first and shown in the timeline: restoring it undoes this."
	if p.Status == engine.StatusHibernated {
		replaces = fmt.Sprintf("the hibernated state of %s", p.Slug)
		for _, h := range t.rows {
			if h.ID == p.HibernationSnapshot {
				replaces += " (its wake point “" + h.Label + "”)"
			}
		}
		undo = "Its hibernation snapshot stays in the timeline: restoring it undoes this."
	}
	body := []para{
		{label: "snapshot", text: t.describeSnapshot(s), style: t.env.theme.Value},
		{label: "replaces", text: replaces, style: t.env.theme.Danger},
		{},
		{text: undo},
	}
	src := t.env.src
	label := s.Label
	if label == "" {
		label = s.ID
	}
	run := startOp(opSpec{title: "restore " + p.Slug + " to “" + label + "”", projectID: p.ID, run: func(ctx context.Context) opResult {
		res, err := src.RestoreSnapshot(ctx, p.ID, s.ID)
		if err != nil {
			return opResult{err: err}
		}
		info := fmt.Sprintf("restored %s to “%s”", p.Slug, label)
		if res.Safety.ID != "" {
			info += fmt.Sprintf("; undo point: safety snapshot %s", res.Safety.ID)
		}
		return opResult{info: info, then: restoredMsg{to: t, safety: res.Safety.ID}}
	}})
	return msgCmd(openDialogMsg{d: newConfirm(t.env, "Restore "+p.Slug+"?", "Restore", body, run)})
}

func (t *timelinePane) whyRelabel() string {
	if _, ok := t.selected(); !ok {
		return "no snapshot selected"
	}
	return ""
}

func (t *timelinePane) relabel() tea.Cmd {
	s, _ := t.selected()
	src, p := t.env.src, t.proj
	body := []para{{text: t.describeSnapshot(s)}}
	// The input shows its value as it is: a label stored before labels were checked starts
	// blanked where it would drive the terminal (the engine refuses such a label anyway).
	d := newPrompt(t.env, "Relabel snapshot", "relabel", body, sanitize(s.Label), "label", engine.MaxLabelLength, func(label string) tea.Cmd {
		return startOp(opSpec{title: "relabel " + s.ID, projectID: p.ID, run: func(ctx context.Context) opResult {
			if _, err := src.RelabelSnapshot(ctx, p.ID, s.ID, label); err != nil {
				return opResult{err: err}
			}
			return opResult{info: fmt.Sprintf("snapshot %s relabelled “%s”", s.ID, label)}
		}})
	})
	return msgCmd(openDialogMsg{d: d})
}

func (t *timelinePane) whyDelete() string {
	s, ok := t.selected()
	if !ok {
		return "no snapshot selected"
	}
	if s.Status == engine.SnapshotPending {
		return "it is still being taken"
	}
	if s.Status == engine.SnapshotDeleted {
		return "it is deleted already"
	}
	if s.ID == t.proj.HibernationSnapshot && t.proj.Status != engine.StatusActive {
		return fmt.Sprintf("%s wakes from it; wake it first", t.proj.Slug)
	}
	return ""
}

func (t *timelinePane) remove() tea.Cmd {
	s, _ := t.selected()
	src, p := t.env.src, t.proj
	body := []para{
		{label: "snapshot", text: t.describeSnapshot(s), style: t.env.theme.Danger},
		{},
		{text: fmt.Sprintf("It leaves the timeline (a manual one frees its slot); its data is purged after %d days.",
			int(engine.SnapshotRetention.Hours()/24))},
	}
	run := startOp(opSpec{title: "delete snapshot " + s.ID, projectID: p.ID, run: func(ctx context.Context) opResult {
		if err := src.DeleteSnapshot(ctx, p.ID, s.ID); err != nil {
			return opResult{err: err}
		}
		return opResult{info: fmt.Sprintf("snapshot %s deleted", s.ID)}
	}})
	return msgCmd(openDialogMsg{d: newConfirm(t.env, "Delete snapshot?", "Delete", body, run)})
}

// toggleDeleted shows or hides the deleted snapshots (the CLI's snapshot ls --all).
func (t *timelinePane) toggleDeleted() tea.Cmd {
	t.showDeleted = !t.showDeleted
	return t.load()
}

func (t *timelinePane) whyUndelete() string {
	s, ok := t.selected()
	switch {
	case !ok:
		return "no snapshot selected"
	case s.Status != engine.SnapshotDeleted:
		if !t.showDeleted {
			return "it is not deleted (a shows the deleted ones)"
		}
		return "it is not deleted"
	case s.Error != "":
		return "it failed and has no data"
	case t.env.now.Sub(s.DeletedAt) > engine.SnapshotRetention-time.Hour:
		return "its retention is over; the purge removes it"
	case s.Type == engine.SnapshotManual && t.full():
		return fmt.Sprintf("the timeline is full (%d/%d); delete one first", len(t.manual()), engine.MaxManualSnapshots)
	}
	return ""
}

func (t *timelinePane) undelete() tea.Cmd {
	s, _ := t.selected()
	src, p := t.env.src, t.proj
	return startOp(opSpec{title: "undelete snapshot " + s.ID, projectID: p.ID, run: func(ctx context.Context) opResult {
		if _, err := src.UndeleteSnapshot(ctx, p.ID, s.ID); err != nil {
			return opResult{err: err}
		}
		return opResult{info: fmt.Sprintf("snapshot %s%s is back in the timeline of %s", s.ID, quoteLabel(s.Label), p.Slug)}
	}})
}

// replaceDialog offers the manual snapshots to give up for a new one labelled label.
func (t *timelinePane) replaceDialog(label string) dialog {
	var cands []engine.Snapshot
	for _, s := range t.manual() {
		if s.Status != engine.SnapshotPending {
			cands = append(cands, s)
		}
	}
	src, p := t.env.src, t.proj
	return newReplaceDialog(t.env, p, cands, label, func(old engine.Snapshot) tea.Cmd {
		return startOp(opSpec{title: "replace " + old.ID + " in " + p.Slug, projectID: p.ID, run: func(ctx context.Context) opResult {
			s, err := src.ReplaceSnapshot(ctx, p.ID, old.ID, label)
			if err != nil {
				return opResult{err: err}
			}
			return opResult{info: fmt.Sprintf("snapshot “%s” of %s is ready; %s was deleted for it", s.Label, p.Slug, old.ID)}
		}})
	})
}
