package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// errInterrupted marks a command a signal (Ctrl-C, SIGTERM, a hangup) ended before it was
// done: it exits 130, as a shell reports a command ended by SIGINT.
var errInterrupted = errors.New("interrupted")

// projectBefore is what interruptedReport compares against: the project and its snapshots as
// they were before the operation.
type projectBefore struct {
	p     engine.Project
	snaps []string
	// started is when each running container started: one the operation stopped and the
	// engine started again when it put the project back has started since.
	started map[string]time.Time
}

// lookBefore reads ref's project, its containers and snapshot IDs before an operation runs on it; a project
// that cannot be read is reported on its own by the operation.
func lookBefore(ctx context.Context, eng *engine.Engine, ref string) projectBefore {
	var b projectBefore
	p, views, err := eng.Containers(ctx, ref)
	if err != nil {
		return b
	}
	b.p, b.started = p, map[string]time.Time{}
	for _, v := range views {
		if v.Status.State == engine.ContainerRunning {
			b.started[v.Name] = v.Status.StartedAt
		}
	}
	if snaps, err := eng.Snapshots(ctx, p.ID, false); err == nil {
		for _, s := range snaps {
			b.snaps = append(b.snaps, s.ID)
		}
	}
	return b
}

// interruptedReport replaces the error of the project operation use that a signal cut short
// ("context canceled" says nothing of the project) with what it left, read afresh: the
// project's state, which of its containers run, and a snapshot it took that stays. The engine
// finishes an operation it abandons (a hibernation is put back, its containers started again),
// so the report is of that outcome, not a guess from where the signal came.
func interruptedReport(ctx context.Context, eng *engine.Engine, use, ref string, before projectBefore) error {
	ctx = context.WithoutCancel(ctx)
	if before.p.ID != "" {
		ref = before.p.ID
	}
	p, views, err := eng.Containers(ctx, ref)
	if err != nil {
		return fmt.Errorf("%w: %s %s did not finish, and its state cannot be read now (%w); sailtui projects ls --all shows it", errInterrupted, use, ref, err)
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s %s did not finish; ", use, p.Slug)
	if p.Status == before.p.Status {
		fmt.Fprintf(&msg, "the project is %s, as before", p.Status)
	} else {
		fmt.Fprintf(&msg, "the project is now %s (it was %s)", p.Status, before.p.Status)
	}
	if p.Status == engine.StatusActive && len(views) > 0 {
		var running, not []string
		for _, v := range views {
			switch v.Status.State {
			case engine.ContainerExternal:
			case engine.ContainerRunning, engine.ContainerStarting:
				if at, ok := before.started[v.Name]; ok && !at.Equal(v.Status.StartedAt) {
					running = append(running, v.Name+" (started again)")
				} else {
					running = append(running, v.Name)
				}
			default:
				not = append(not, v.Name+" "+string(v.Status.State))
			}
		}
		if len(running) > 0 {
			fmt.Fprintf(&msg, "; containers running: %s", strings.Join(running, ", "))
		}
		if len(not) > 0 {
			fmt.Fprintf(&msg, "; not running: %s", strings.Join(not, ", "))
		}
	}
	if snaps, err := eng.Snapshots(ctx, p.ID, false); err == nil {
		for _, s := range snaps {
			if !slices.Contains(before.snaps, s.ID) && s.Status == engine.SnapshotReady {
				fmt.Fprintf(&msg, "; the %s snapshot %s it took stays in the timeline", s.Type, s.ID)
			}
		}
	}
	if next := engine.NextStep(p); next != "" {
		fmt.Fprintf(&msg, "; next: %s", next)
	} else if p.Status == before.p.Status {
		fmt.Fprintf(&msg, "; sailtui project %s %s runs it again", use, p.Slug)
	}
	if p.OpID != "" {
		fmt.Fprintf(&msg, "; its %s is still held (the next sweep or sailtui doctor --fix finishes it)", p.OpKind)
	}
	return fmt.Errorf("%w: %s", errInterrupted, msg.String())
}
