package ui

import "charm.land/bubbles/v2/textinput"

// newInput is a one-line text input in the console's style.
func newInput(e *env, prompt, placeholder string) textinput.Model {
	in := textinput.New()
	in.Prompt = prompt
	in.Placeholder = placeholder
	// The real terminal cursor: a virtual one would draw itself with escape sequences even
	// under NO_COLOR.
	in.SetVirtualCursor(false)
	st := in.Styles()
	for _, s := range []*textinput.StyleState{&st.Focused, &st.Blurred} {
		s.Prompt = e.theme.FilterPrompt
		s.Text = e.theme.FilterText
		s.Placeholder = e.theme.Muted
		s.Suggestion = e.theme.Muted
	}
	st.Cursor.Blink = false
	if e.theme.NoColor {
		st.Cursor.Color = nil
	}
	in.SetStyles(st)
	return in
}
