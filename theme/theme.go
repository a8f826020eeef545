// Package theme holds the console's lipgloss styles: one Theme per skin, picked by name. It has
// no logic beyond choosing styles, so the ui package never hard-codes a colour.
package theme

import (
	"fmt"
	"image/color"
	"os"
	"slices"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/sailtui/sailtui/engine"
)

// Skin names.
const (
	Dark  = "dark"
	Light = "light"
)

// Default is the skin used when none is named.
const Default = Dark

// Theme is every style the console uses. The zero Theme is usable: all styles plain.
type Theme struct {
	// Name is the skin's name ("dark", "light"); NoColor tells that colours are off.
	Name    string
	NoColor bool

	// Header bar: the application name, labels and their values, the read-only badge.
	App      lipgloss.Style
	Label    lipgloss.Style
	Value    lipgloss.Style
	ReadOnly lipgloss.Style

	// Title is a pane's breadcrumb line; TableHeader its column headings.
	Title       lipgloss.Style
	TableHeader lipgloss.Style
	// Selected is applied to the whole line of the row under the cursor.
	Selected lipgloss.Style
	Muted    lipgloss.Style
	Error    lipgloss.Style
	// Live and Stale mark the event stream's state in the header.
	Live  lipgloss.Style
	Stale lipgloss.Style

	FilterPrompt lipgloss.Style
	FilterText   lipgloss.Style

	HelpKey  lipgloss.Style
	HelpDesc lipgloss.Style
	HelpSep  lipgloss.Style

	// Info is the status line's report of a finished action; Hint explains why a key did nothing.
	Info lipgloss.Style
	Hint lipgloss.Style

	// Dialogs: the frame, the title, the buttons (the focused one stands out) and a dialog's
	// list selection.
	DialogBorder  lipgloss.Style
	DialogTitle   lipgloss.Style
	Button        lipgloss.Style
	ButtonFocused lipgloss.Style
	// Danger names what a destructive action will replace or remove.
	Danger lipgloss.Style

	// ProgressFull and ProgressEmpty draw the two parts of a progress bar.
	ProgressFull  lipgloss.Style
	ProgressEmpty lipgloss.Style

	// Logs: search matches, the receive time column, and markers the console inserts itself
	// (reconnects, dropped lines).
	Match     lipgloss.Style
	LogTime   lipgloss.Style
	LogMarker lipgloss.Style
	// A log stream's state: flowing, worth a look (quiet, ended, paused), broken.
	StreamOK   lipgloss.Style
	StreamWarn lipgloss.Style
	StreamBad  lipgloss.Style

	// Pointers: a table cell holds its style by reference, not a 648-byte copy per cell.
	status    map[engine.ProjectStatus]*lipgloss.Style
	container map[engine.ContainerState]*lipgloss.Style
	snapshot  map[engine.SnapshotStatus]*lipgloss.Style
}

// Names lists the skins New accepts.
func Names() []string { return []string{Dark, Light} }

// FromEnv is New with colours turned off when NO_COLOR is set to anything but "" (no-color.org).
func FromEnv(name string) (Theme, error) {
	return New(name, os.Getenv("NO_COLOR") != "")
}

// New returns the named skin ("" is Default). With noColor every style is plain, so the
// console writes no escape sequences of its own.
func New(name string, noColor bool) (Theme, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		name = Default
	}
	if !slices.Contains(Names(), name) {
		return Theme{}, fmt.Errorf("unknown skin %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if noColor {
		return Theme{Name: name, NoColor: true}, nil
	}
	if name == Light {
		return build(name, lightPalette), nil
	}
	return build(name, darkPalette), nil
}

// Status is the badge style of a project status; unknown statuses get the muted style.
func (t *Theme) Status(s engine.ProjectStatus) *lipgloss.Style {
	if st, ok := t.status[s]; ok {
		return st
	}
	return &t.Muted
}

// Snapshot is the style of a snapshot's state in the timeline.
func (t *Theme) Snapshot(s engine.SnapshotStatus) *lipgloss.Style {
	if st, ok := t.snapshot[s]; ok {
		return st
	}
	return &t.Muted
}

// Container is the style of a container state as runtimes report it (engine.ContainerRunning...).
func (t *Theme) Container(state engine.ContainerState) *lipgloss.Style {
	if st, ok := t.container[state]; ok {
		return st
	}
	return &t.Muted
}

func ref(s lipgloss.Style) *lipgloss.Style { return &s }

type palette struct {
	fg, muted, accent, selFg, selBg                  color.Color
	green, yellow, blue, cyan, red, grey, roBg, roFg color.Color
}

var darkPalette = palette{
	fg:     lipgloss.Color("#E4E4E4"),
	muted:  lipgloss.Color("#8A8A8A"),
	accent: lipgloss.Color("#5FAFFF"),
	selFg:  lipgloss.Color("#FFFFFF"),
	selBg:  lipgloss.Color("#005F87"),
	green:  lipgloss.Color("#5FD75F"),
	yellow: lipgloss.Color("#FFD75F"),
	blue:   lipgloss.Color("#5FAFFF"),
	cyan:   lipgloss.Color("#5FD7D7"),
	red:    lipgloss.Color("#FF5F5F"),
	grey:   lipgloss.Color("#6C6C6C"),
	roBg:   lipgloss.Color("#D75F00"),
	roFg:   lipgloss.Color("#000000"),
}

var lightPalette = palette{
	fg:     lipgloss.Color("#1C1C1C"),
	muted:  lipgloss.Color("#6C6C6C"),
	accent: lipgloss.Color("#005FAF"),
	selFg:  lipgloss.Color("#000000"),
	selBg:  lipgloss.Color("#AFD7FF"),
	green:  lipgloss.Color("#008700"),
	yellow: lipgloss.Color("#AF8700"),
	blue:   lipgloss.Color("#005FD7"),
	cyan:   lipgloss.Color("#008787"),
	red:    lipgloss.Color("#D70000"),
	grey:   lipgloss.Color("#8A8A8A"),
	roBg:   lipgloss.Color("#D75F00"),
	roFg:   lipgloss.Color("#FFFFFF"),
}

func build(name string, p palette) Theme {
	fg := func(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }
	return Theme{
		Name:          name,
		App:           fg(p.accent).Bold(true),
		Label:         fg(p.muted),
		Value:         fg(p.fg),
		ReadOnly:      lipgloss.NewStyle().Foreground(p.roFg).Background(p.roBg).Bold(true),
		Title:         fg(p.accent).Bold(true),
		TableHeader:   fg(p.muted).Bold(true),
		Selected:      lipgloss.NewStyle().Foreground(p.selFg).Background(p.selBg),
		Muted:         fg(p.muted),
		Error:         fg(p.red),
		Live:          fg(p.green),
		Stale:         fg(p.yellow),
		FilterPrompt:  fg(p.accent).Bold(true),
		FilterText:    fg(p.fg),
		HelpKey:       fg(p.accent),
		HelpDesc:      fg(p.muted),
		HelpSep:       fg(p.grey),
		Info:          fg(p.green),
		Hint:          fg(p.yellow),
		DialogBorder:  fg(p.accent),
		DialogTitle:   fg(p.accent).Bold(true),
		Button:        fg(p.muted),
		ButtonFocused: lipgloss.NewStyle().Foreground(p.selFg).Background(p.selBg).Bold(true),
		Danger:        fg(p.red).Bold(true),
		ProgressFull:  fg(p.accent),
		ProgressEmpty: fg(p.grey),
		Match:         lipgloss.NewStyle().Foreground(p.roFg).Background(p.yellow),
		LogTime:       fg(p.muted),
		LogMarker:     fg(p.yellow).Italic(true),
		StreamOK:      fg(p.green),
		StreamWarn:    fg(p.yellow),
		StreamBad:     fg(p.red).Bold(true),
		status: map[engine.ProjectStatus]*lipgloss.Style{
			engine.StatusActive:      ref(fg(p.green)),
			engine.StatusHibernating: ref(fg(p.yellow)),
			engine.StatusHibernated:  ref(fg(p.blue)),
			engine.StatusRestoring:   ref(fg(p.cyan)),
			engine.StatusFailed:      ref(fg(p.red).Bold(true)),
			engine.StatusDeleted:     ref(fg(p.grey).Strikethrough(true)),
		},
		container: map[engine.ContainerState]*lipgloss.Style{
			engine.ContainerRunning:  ref(fg(p.green)),
			engine.ContainerStarting: ref(fg(p.cyan)),
			engine.ContainerStopped:  ref(fg(p.muted)),
			engine.ContainerExited:   ref(fg(p.red)),
			engine.ContainerUnknown:  ref(fg(p.yellow)),
			engine.ContainerMissing:  ref(fg(p.red)),
		},
		snapshot: map[engine.SnapshotStatus]*lipgloss.Style{
			engine.SnapshotReady:   ref(fg(p.green)),
			engine.SnapshotPending: ref(fg(p.cyan)),
			engine.SnapshotError:   ref(fg(p.red).Bold(true)),
			engine.SnapshotDeleted: ref(fg(p.grey).Strikethrough(true)),
		},
	}
}
