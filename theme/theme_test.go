package theme

import (
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

var allStatuses = []engine.ProjectStatus{
	engine.StatusActive, engine.StatusHibernating, engine.StatusHibernated,
	engine.StatusRestoring, engine.StatusFailed, engine.StatusDeleted,
}

func TestSkinsByName(t *testing.T) {
	for _, name := range []string{"", "dark", "light", " Light "} {
		th, err := New(name, false)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if th.NoColor {
			t.Errorf("New(%q): NoColor set", name)
		}
		for _, s := range allStatuses {
			if out := th.Status(s).Render(string(s)); !strings.Contains(out, "\x1b[") {
				t.Errorf("skin %q: badge %s is not coloured: %q", th.Name, s, out)
			}
		}
	}
	if _, err := New("solarized", false); err == nil || !strings.Contains(err.Error(), "dark") {
		t.Errorf("unknown skin: err = %v, want one listing the known skins", err)
	}
}

func TestSkinsDiffer(t *testing.T) {
	d, _ := New(Dark, false)
	l, _ := New(Light, false)
	if d.Selected.Render("x") == l.Selected.Render("x") {
		t.Error("dark and light skins render the selection alike")
	}
}

func TestNoColorIsPlain(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	for _, name := range Names() {
		th, err := FromEnv(name)
		if err != nil {
			t.Fatal(err)
		}
		if !th.NoColor {
			t.Fatalf("FromEnv(%q) with NO_COLOR: colours still on", name)
		}
		styles := []string{
			th.App.Render("a"), th.ReadOnly.Render("ro"), th.Selected.Render("sel"),
			th.Error.Render("err"), th.Container(engine.ContainerRunning).Render("running"),
		}
		for _, s := range allStatuses {
			styles = append(styles, th.Status(s).Render(string(s)))
		}
		for _, out := range styles {
			if strings.Contains(out, "\x1b") {
				t.Errorf("skin %q under NO_COLOR wrote an escape sequence: %q", name, out)
			}
		}
	}
}

func TestEmptyNoColorKeepsColours(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	th, err := FromEnv("")
	if err != nil {
		t.Fatal(err)
	}
	if th.NoColor {
		t.Error("NO_COLOR set to the empty string turned colours off")
	}
}

func TestUnknownStatusFallsBackToMuted(t *testing.T) {
	th, _ := New(Dark, false)
	if got, want := th.Status("zombie").Render("z"), th.Muted.Render("z"); got != want {
		t.Errorf("unknown status = %q, want muted %q", got, want)
	}
}

func TestConsoleStylesPlainUnderNoColor(t *testing.T) {
	th, err := New(Dark, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{
		th.ButtonFocused.Render("[ Cancel ]"), th.Match.Render("needle"), th.ProgressFull.Render("███"),
		th.Danger.Render("replaces"), th.DialogBorder.Render("╭─"), th.StreamBad.Render("✗"),
		th.Snapshot(engine.SnapshotReady).Render("ready"), th.Info.Render("✓"),
	} {
		if strings.Contains(out, "\x1b") {
			t.Errorf("NO_COLOR wrote an escape sequence: %q", out)
		}
	}
}

func TestSnapshotStates(t *testing.T) {
	th, _ := New(Dark, false)
	for _, s := range []engine.SnapshotStatus{engine.SnapshotReady, engine.SnapshotPending, engine.SnapshotError, engine.SnapshotDeleted} {
		if out := th.Snapshot(s).Render(string(s)); !strings.Contains(out, "\x1b[") {
			t.Errorf("snapshot state %s is not coloured", s)
		}
	}
	if got, want := th.Snapshot("weird").Render("w"), th.Muted.Render("w"); got != want {
		t.Errorf("unknown snapshot state = %q, want muted", got)
	}
	// The focused button must stand out from the others.
	if th.ButtonFocused.Render("x") == th.Button.Render("x") {
		t.Error("the focused button looks like the others")
	}
}
