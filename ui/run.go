// Package ui is sailtui's interactive console: a Bubble Tea program over the engine. It reads
// through the engine only, and every engine call runs inside a tea.Cmd, never in Update.
package ui

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime/debug"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/theme"
)

// consoleFPS caps the frame rate while frames come (a burst of log lines, a key held down).
// Idle, the renderer does not tick at all: Bubble Tea's ticker ran whether or not anything
// changed, and on this kind of machine its wake-ups cost more than drawing (0.8 % of a core at
// 60, 0.35 % at 20: issue 19), so ui/third_party/bubbletea has no ticker: a frame is drawn
// when one is asked for, and a one-shot timer holds the next to this rate (PATCH.md).
const consoleFPS = 60

// Options configures the console.
type Options struct {
	// Skin names the theme (see theme.Names); "" is the default. NO_COLOR turns colours off
	// whatever the skin.
	Skin string
	// ReadOnly leaves every action that changes something out of the key maps and shows the
	// read-only badge; it is also on when the engine itself is read-only.
	ReadOnly bool
	// Mode is the deployment mode for the status bar; "" asks the engine's runtime.
	Mode string
	// StoreName describes the store for the status bar; "" asks the store.
	StoreName string
	// Location is the zone clock times are shown in; nil is the local zone.
	Location *time.Location
	// Shell, when set, is the command e runs for a shell in a container (sailtui exec -it
	// PROJECT CONTAINER -- sh): the console suspends while it runs on the terminal. nil
	// leaves e out.
	Shell func(project, container string) *exec.Cmd
	// SaveDir is where a saved log goes (a name without a directory is taken from it; it is
	// made on the first save). "" is the directory the console started in.
	SaveDir string
}

// Run shows the console until the operator quits or ctx ends. It returns nil on a normal quit.
func Run(ctx context.Context, eng *engine.Engine, opts Options) error {
	if eng == nil {
		return errors.New("ui: no engine")
	}
	th, err := theme.FromEnv(opts.Skin)
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	if opts.Mode == "" {
		opts.Mode = eng.Mode()
	}
	if opts.StoreName == "" {
		opts.StoreName = eng.StoreName()
	}
	opts.ReadOnly = opts.ReadOnly || eng.ReadOnly()

	// Cancelled on return so the event subscription and any load still running stop with
	// the console instead of outliving it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, engineSource{eng}, th, opts)
	// The first list of a large fleet allocates every project once; collecting while it is
	// read scans the growing list again and again. GC less until it is in, then give the
	// garbage back (onProjects): at 100k this took a third off the CPU time to the first
	// list, for a peak no higher than before (issue 19; 400 raised the peak by a quarter).
	m.live.loadGCPercent = debug.SetGCPercent(200)
	if m.live.loadGCPercent <= 0 {
		debug.SetGCPercent(m.live.loadGCPercent) // GC off or a limit-only set-up: leave it
		m.live.loadGCPercent = 0
	}
	m.startFirstLoad()
	_, err = tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(consoleFPS)).Run()
	if err != nil && errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		// Cancelled from outside (a signal in main): not a console failure.
		return nil
	}
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	return nil
}
