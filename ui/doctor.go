package ui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// doctorPane shows what `sailtui doctor` finds: the engine's own checks of the store against
// the runtime and the object store, each finding with the command that sets it right. It only
// reads; fixes are the CLI's (sailtui doctor --fix), named in the pane.
type doctorPane struct {
	textPane
	rep engine.DoctorReport
}

func newDoctorPane(e *env) *doctorPane {
	return &doctorPane{textPane: newTextPane(e, "checking the store against the runtime and the object store…", true)}
}

func (d *doctorPane) kind() paneKind                  { return kindDoctor }
func (d *doctorPane) crumb() string                   { return "Doctor" }
func (d *doctorPane) open() tea.Cmd                   { return d.load() }
func (d *doctorPane) project() (engine.Project, bool) { return engine.Project{}, false }

func (d *doctorPane) info() string {
	switch {
	case d.loaded:
		return fmt.Sprintf("%d findings", len(d.rep.Findings))
	case d.gate.loading:
		return "checking…"
	}
	return ""
}

type doctorMsg struct {
	to  *doctorPane
	rep engine.DoctorReport
	err error
}

func (m doctorMsg) target() pane { return m.to }

// deliver does not check again for a refresh that came in meanwhile: the checks list every
// environment and object, and the answer just in is as fresh as it gets.
func (m doctorMsg) deliver() tea.Cmd {
	d := m.to
	var text string
	if m.err == nil {
		d.rep = m.rep
		text = d.render()
	}
	return d.took(text, m.err, "doctor", nil)
}

func (d *doctorPane) load() tea.Cmd {
	src := d.env.src
	return d.gate.load(d.env.ctx, func(ctx context.Context) tea.Msg {
		rep, err := src.Doctor(ctx)
		return doctorMsg{to: d, rep: rep, err: err}
	})
}

// refresh checks again only when forced: the checks list every environment and object, which
// is not a thing to do on every event.
func (d *doctorPane) refresh(force bool, _ map[string]bool) tea.Cmd {
	if !force {
		return nil
	}
	return d.load()
}

func (d *doctorPane) render() string {
	var b strings.Builder
	if len(d.rep.Findings) == 0 {
		b.WriteString("No findings: the store, the runtime and the object store agree.\n")
	}
	fixable := 0
	for _, f := range d.rep.Findings {
		if f.Fixable {
			fixable++
		}
		where := ""
		if f.Project != "" {
			where = "  " + sanitize(f.Project)
		}
		fmt.Fprintf(&b, "%s%s\n  %s\n  fix: %s\n\n", strings.ToUpper(f.Check), where, sanitize(f.Detail), sanitize(f.Fix))
	}
	if fixable > 0 {
		fmt.Fprintf(&b, "%d of these are set right by: sailtui doctor --fix\n", fixable)
	}
	if len(d.rep.Unsupported) > 0 {
		fmt.Fprintf(&b, "Not checked here: %s\n", strings.Join(d.rep.Unsupported, ", "))
	}
	return b.String()
}
