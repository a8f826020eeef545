package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// The Projects pane's actions on the selected project. Each why* mirrors what the engine
// would refuse, so the help offers only what can work and a key that cannot says why at once.

func (p *projectsPane) whySelected() string {
	if _, ok := p.selected(); !ok {
		return "no project selected"
	}
	return ""
}

func (p *projectsPane) show(k paneKind) func() tea.Cmd {
	return func() tea.Cmd {
		sel, _ := p.selected()
		return showCmd(k, sel, "")
	}
}

// running is how many containers of the project run, when known.
func (p *projectsPane) running(pr engine.Project) (n int, known bool) {
	u, ok := p.usage[pr.ID]
	if !ok || u.err != nil {
		return 0, false
	}
	return u.running, true
}

// stops tells whether s stops the project (some container runs) rather than starts it.
func (p *projectsPane) stops(pr engine.Project) bool {
	n, known := p.running(pr)
	return pr.Status == engine.StatusActive && known && n > 0
}

func (p *projectsPane) whyStartStop() string {
	pr, ok := p.selected()
	if !ok {
		return "no project selected"
	}
	if why := p.env.busyWhy(pr); why != "" {
		return why
	}
	switch pr.Status {
	case engine.StatusActive, engine.StatusHibernated, engine.StatusFailed:
		return ""
	}
	return fmt.Sprintf("%s is %s", pr.Slug, pr.Status)
}

func (p *projectsPane) startStopLabel() string {
	pr, _ := p.selected()
	switch {
	case p.stops(pr):
		return "stop"
	case pr.Status == engine.StatusHibernated:
		return "start (wakes)"
	}
	return "start"
}

func (p *projectsPane) startStop() tea.Cmd {
	pr, _ := p.selected()
	src := p.env.src
	if !p.stops(pr) {
		return startOp(opSpec{title: "start " + pr.Slug, projectID: pr.ID, run: func(ctx context.Context) opResult {
			if _, err := src.StartProject(ctx, pr.ID); err != nil {
				return opResult{err: err}
			}
			return opResult{info: pr.Slug + " started"}
		}})
	}
	n, _ := p.running(pr)
	body := []para{
		{text: fmt.Sprintf("%s stops: its %s.", pr.Slug, plural(n, "running container"))},
		{},
		{text: "Files stay and the project stays active; s starts it again."},
	}
	stop := startOp(opSpec{title: "stop " + pr.Slug, projectID: pr.ID, run: func(ctx context.Context) opResult {
		if _, err := src.StopProject(ctx, pr.ID); err != nil {
			return opResult{err: err}
		}
		return opResult{info: pr.Slug + " stopped"}
	}})
	return msgCmd(openDialogMsg{d: newConfirm(p.env, "Stop "+pr.Slug+"?", "Stop", body, stop)})
}

func (p *projectsPane) whyHibernate() string {
	pr, ok := p.selected()
	if !ok {
		return "no project selected"
	}
	if why := p.env.busyWhy(pr); why != "" {
		return why
	}
	if pr.Status != engine.StatusActive {
		return fmt.Sprintf("%s is %s", pr.Slug, pr.Status)
	}
	return ""
}

func (p *projectsPane) hibernate() tea.Cmd {
	pr, _ := p.selected()
	src := p.env.src
	n, known := p.running(pr)
	body := []para{
		{text: fmt.Sprintf("All of %s's files are snapshotted and the snapshot verified; then %s.", pr.Slug, hibernateThen(n, known))},
		{},
		{text: "w wakes it from that snapshot."},
	}
	run := startOp(opSpec{title: "hibernate " + pr.Slug, projectID: pr.ID, run: func(ctx context.Context) opResult {
		if _, err := src.Hibernate(ctx, pr.ID); err != nil {
			return opResult{err: err}
		}
		return opResult{info: pr.Slug + " hibernated"}
	}})
	return msgCmd(openDialogMsg{d: newConfirm(p.env, "Hibernate "+pr.Slug+"?", "Hibernate", body, run)})
}

func (p *projectsPane) whyWake() string {
	pr, ok := p.selected()
	if !ok {
		return "no project selected"
	}
	if why := p.env.busyWhy(pr); why != "" {
		return why
	}
	switch {
	case pr.Status == engine.StatusHibernated:
		return ""
	case pr.Status == engine.StatusFailed && pr.HibernationSnapshot != "":
		return ""
	}
	return fmt.Sprintf("%s is %s", pr.Slug, pr.Status)
}

func (p *projectsPane) wake() tea.Cmd {
	pr, _ := p.selected()
	src := p.env.src
	return startOp(opSpec{title: "wake " + pr.Slug, projectID: pr.ID, run: func(ctx context.Context) opResult {
		if _, err := src.Wake(ctx, pr.ID); err != nil {
			return opResult{err: err}
		}
		return opResult{info: pr.Slug + " is awake"}
	}})
}

func (p *projectsPane) whyKeepAlive() string {
	pr, ok := p.selected()
	if !ok {
		return "no project selected"
	}
	if pr.Status != engine.StatusActive {
		return fmt.Sprintf("%s is %s: only an active project is swept", pr.Slug, pr.Status)
	}
	return ""
}

// keepAlive asks for how long the sweep should leave the project alone (what the user would
// say before leaving a job running), prefilled with what is left of the current keep-alive;
// an empty answer or 0 ends it.
func (p *projectsPane) keepAlive() tea.Cmd {
	pr, _ := p.selected()
	src, now := p.env.src, p.env.now
	body := []para{{text: "The idle sweep leaves " + pr.Slug + " alone for this long, whatever else happens (at most SAILTUI_MAX_KEEP_ALIVE). It counts as activity. Empty or 0 ends a keep-alive."}}
	value := "2h"
	if pr.KeptAlive(now) {
		body = append(body, para{}, para{text: "Kept alive until " + pr.KeepAliveUntil.In(p.env.loc).Format("15:04") + " now."})
		value = ""
	}
	d := newPrompt(p.env, "Keep "+pr.Slug+" alive", "keep alive", body, value, "for how long: 90m, 2h", 16, func(v string) tea.Cmd {
		v = strings.TrimSpace(v)
		if v == "" || v == "0" {
			return startOp(opSpec{title: "end keep-alive of " + pr.Slug, projectID: pr.ID, run: func(ctx context.Context) opResult {
				if _, err := src.CancelKeepAlive(ctx, pr.ID); err != nil {
					return opResult{err: err}
				}
				return opResult{info: pr.Slug + ": keep-alive ended"}
			}})
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return hintCmd(fmt.Sprintf("keep alive %q: want a duration such as 90m or 2h", v))
		}
		return startOp(opSpec{title: "keep " + pr.Slug + " alive", projectID: pr.ID, run: func(ctx context.Context) opResult {
			got, err := src.KeepAlive(ctx, pr.ID, d)
			if err != nil {
				return opResult{err: err}
			}
			return opResult{info: pr.Slug + " kept alive until " + got.KeepAliveUntil.In(p.env.loc).Format("15:04")}
		}})
	})
	return msgCmd(openDialogMsg{d: d})
}

// plural is "1 thing" or "n things".
// hibernateThen says what a hibernation does after its snapshot, for n running containers
// (known: n is what the runtime reported): a number only where it is one, a verb that agrees.
func hibernateThen(n int, known bool) string {
	switch {
	case !known:
		return "its containers stop and its environment is removed"
	case n == 0:
		return "its environment is removed (no container is running)"
	case n == 1:
		return "its running container stops and its environment is removed"
	}
	return fmt.Sprintf("its %d running containers stop and its environment is removed", n)
}

func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
