package ui

import (
	"context"
	"fmt"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/sailtui/sailtui/engine"
)

// The logs pane says when its container is not running: a stream of a stopped container is
// open but can bring nothing, and "streaming" there would be a lie. It reads the container's
// status as the Containers pane does (src.Containers), when it opens and then when the console
// refreshes (its slow tick, and events about its project): never per frame.

// logStatus is what the pane knows of its container.
type logStatus struct {
	known   bool
	project engine.ProjectStatus
	state   engine.ContainerState
	exit    int
}

// logStatusMsg answers a status load of the pane's container.
type logStatusMsg struct {
	to      *logsPane
	project engine.Project
	view    engine.ContainerView
	found   bool
	err     error
}

func (m logStatusMsg) target() pane { return m.to }
func (m logStatusMsg) deliver() tea.Cmd {
	l := m.to
	again := l.statGate.done()
	if m.err == nil {
		l.proj = m.project
		l.cstat = logStatus{known: true, project: m.project.Status}
		if m.found {
			l.cstat.state, l.cstat.exit = m.view.Status.State, m.view.Status.ExitCode
		}
	}
	if again {
		return l.loadStatus()
	}
	return nil
}

func (l *logsPane) loadStatus() tea.Cmd {
	src, id, name := l.env.src, l.proj.ID, l.container
	return l.statGate.load(l.env.ctx, func(ctx context.Context) tea.Msg {
		p, views, err := src.Containers(ctx, id)
		msg := logStatusMsg{to: l, project: p, err: err}
		for _, v := range views {
			if v.Name == name {
				msg.view, msg.found = v, true
			}
		}
		return msg
	})
}

// notRunning is the state shown in place of the stream's when the container does not run
// (ok false: it runs, or its state is not known yet).
func (l *logsPane) notRunning() (string, lipgloss.Style, bool) {
	th := &l.env.theme
	st := l.cstat
	if !st.known {
		return "", th.StreamWarn, false
	}
	switch st.project {
	case engine.StatusHibernated, engine.StatusHibernating:
		return "◼ " + string(st.project) + " (the log is what it wrote before)", th.StreamWarn, true
	case engine.StatusRestoring:
		return "◌ restoring", th.StreamWarn, true
	}
	switch st.state {
	case engine.ContainerStopped:
		return "■ stopped", th.StreamWarn, true
	case engine.ContainerExited:
		return fmt.Sprintf("✗ exited (%d)", st.exit), th.StreamBad, true
	case engine.ContainerMissing:
		return "✗ missing (removed outside sailtui)", th.StreamBad, true
	}
	return "", th.StreamWarn, false
}
