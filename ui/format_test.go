package ui

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"charm.land/lipgloss/v2"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/theme"
)

// TestRenderInlineIsRender: the cached wrap of every style of every skin renders any cell text
// as lipgloss would, including styles (strikethrough, padding, a transform) that cannot be
// wrapped and must keep rendering each text.
func TestRenderInlineIsRender(t *testing.T) {
	var styles []*lipgloss.Style
	for _, noColor := range []bool{false, true} {
		for _, name := range theme.Names() {
			th, err := theme.New(name, noColor)
			if err != nil {
				t.Fatal(err)
			}
			v := reflect.ValueOf(&th).Elem()
			for i := range v.NumField() {
				if !v.Type().Field(i).IsExported() {
					continue
				}
				if st, ok := v.Field(i).Addr().Interface().(*lipgloss.Style); ok {
					styles = append(styles, st)
				}
			}
			for _, s := range []engine.ProjectStatus{engine.StatusActive, engine.StatusHibernating, engine.StatusHibernated,
				engine.StatusRestoring, engine.StatusFailed, engine.StatusDeleted} {
				styles = append(styles, th.Status(s))
			}
			for _, s := range []engine.SnapshotStatus{engine.SnapshotReady, engine.SnapshotPending, engine.SnapshotError, engine.SnapshotDeleted} {
				styles = append(styles, th.Snapshot(s))
			}
		}
	}
	padded := lipgloss.NewStyle().Bold(true).PaddingLeft(2).Width(12)
	upper := lipgloss.NewStyle().Underline(true).Transform(func(s string) string { return s + "!" })
	styles = append(styles, &padded, &upper)
	if len(styles) < 60 {
		t.Fatalf("found only %d styles: the theme's fields moved?", len(styles))
	}
	pieces := []string{"", " ", "a", "12s ago", "proj-000123", "—", "世界", "é", "…", "-", "due", "3/5", "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, st := range styles {
		for range 50 {
			text := ""
			for range rng.IntN(4) {
				text += pieces[rng.IntN(len(pieces))]
			}
			want := st.Inline(true).Render(text)
			if got := renderInline(st, text); got != want {
				t.Fatalf("renderInline(%q) = %q; lipgloss renders %q", text, got, want)
			}
		}
	}
}
