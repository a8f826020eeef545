package ui

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// doctorPane shows what `sailtui doctor` finds: the engine's own checks of the store against
// the runtime and the object store, each finding with the command that sets it right. It only
// reads; fixes are the CLI's (sailtui doctor --fix), named in the pane.
type doctorPane struct {
	noInput
	env  *env
	keys textKeys
	text textView
	w, h int

	rep             engine.DoctorReport
	loaded, loading bool
	err             error
}

func newDoctorPane(e *env) *doctorPane { return &doctorPane{env: e, keys: newTextKeys()} }

func (d *doctorPane) kind() paneKind                  { return kindDoctor }
func (d *doctorPane) crumb() string                   { return "Doctor" }
func (d *doctorPane) open() tea.Cmd                   { return d.load() }
func (d *doctorPane) close()                          {}
func (d *doctorPane) project() (engine.Project, bool) { return engine.Project{}, false }
func (d *doctorPane) keyMap() help.KeyMap             { return d.text.keyMap(d.keys) }

func (d *doctorPane) info() string {
	switch {
	case d.loaded:
		return fmt.Sprintf("%d findings", len(d.rep.Findings))
	case d.loading:
		return "checking…"
	}
	return ""
}

func (d *doctorPane) setSize(w, h int) {
	d.w, d.h = w, h
	d.text.setSize(w, h)
}

func (d *doctorPane) update(msg tea.KeyPressMsg) tea.Cmd {
	d.text.scroll(d.keys, msg)
	return nil
}

type doctorMsg struct {
	to  *doctorPane
	rep engine.DoctorReport
	err error
}

func (m doctorMsg) target() pane { return m.to }
func (m doctorMsg) deliver() tea.Cmd {
	d := m.to
	d.loading, d.err = false, m.err
	if m.err != nil {
		return msgCmd(errMsg{err: fmt.Errorf("doctor: %w", m.err)})
	}
	d.rep, d.loaded = m.rep, true
	d.text.setText(d.render())
	return nil
}

func (d *doctorPane) load() tea.Cmd {
	if d.loading {
		return nil
	}
	d.loading = true
	ctx, src := d.env.ctx, d.env.src
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		rep, err := src.Doctor(ctx)
		return doctorMsg{to: d, rep: rep, err: err}
	}
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

func (d *doctorPane) view() string {
	return reportView(d.env, &d.text, d.loaded, d.err, "checking the store against the runtime and the object store…", d.w, d.h)
}
