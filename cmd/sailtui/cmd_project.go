package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sailtui/sailtui/backends/docker"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/tesslate"
)

// projectRow is the stable JSON of a project in listings and action results.
type projectRow struct {
	ID           string    `json:"id"`
	Slug         string    `json:"slug"`
	Name         string    `json:"name"`
	Owner        string    `json:"owner"`
	Status       string    `json:"status"`
	StatusReason string    `json:"status_reason,omitempty"`
	LastActivity time.Time `json:"last_activity"`
	// LastActivitySource is the door the newest activity came through ("files", "exec",
	// "start", a platform's own from project touch --source), LastActivityActor who used it.
	LastActivitySource string `json:"last_activity_source,omitempty"`
	LastActivityActor  string `json:"last_activity_actor,omitempty"`
	// KeepAliveUntil is when project keep-alive stops holding the idle sweep off; absent
	// when none is set or it is over.
	KeepAliveUntil time.Time `json:"keep_alive_until,omitzero"`
	CreatedAt      time.Time `json:"created_at"`
	Operation      string    `json:"operation,omitempty"`
	// NextStep says what moves a failed project on (engine.NextStep).
	NextStep string `json:"next_step,omitempty"`
	// Containers are the project's containers as containers ls gives them, after the actions
	// that make or start them (project create, start, wake); absent elsewhere.
	Containers []containerRow `json:"containers,omitempty"`
	// shown is the status as tables show it (engine.DisplayStatus): "start failed" for an
	// active project whose last start failed.
	shown string
}

func rowOf(p engine.Project, now time.Time) projectRow {
	var kept time.Time
	if p.KeptAlive(now) {
		kept = p.KeepAliveUntil
	}
	return projectRow{KeepAliveUntil: kept, ID: p.ID, Slug: p.Slug, Name: p.Name, Owner: p.Owner, Status: string(p.Status),
		StatusReason: p.StatusReason, LastActivity: p.LastActivity, CreatedAt: p.CreatedAt, Operation: string(p.OpKind),
		LastActivitySource: p.LastActivitySource, LastActivityActor: p.LastActivityActor,
		NextStep: engine.NextStep(p), shown: engine.DisplayStatus(p)}
}

func printProject(a *app, cmd *cobra.Command, p engine.Project, now time.Time) error {
	return printProjectRow(a, cmd, p, rowOf(p, now), now, nil)
}

// printWithContainers prints the project an action made or started with its containers as
// containers ls shows them (their URLs are what the operator goes on to open). A listing
// that cannot be read does not undo the action: the project is printed alone, with a warning.
func printWithContainers(a *app, cmd *cobra.Command, eng *engine.Engine, p engine.Project) error {
	now := eng.Now()
	l, err := listContainers(cmd.Context(), eng, p.ID, nil)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: containers not listed: %s\n", printable(err.Error()))
		return printProject(a, cmd, p, now)
	}
	r := rowOf(p, now)
	r.Containers = l.rows
	return printProjectRow(a, cmd, p, r, now, func(tw *tabwriter.Writer) {
		if len(l.rows) > 0 {
			fmt.Fprintln(tw)
			l.table(tw, false)
		}
	})
}

// printProjectRow prints r, the row of p, and then what more writes, if anything.
func printProjectRow(a *app, cmd *cobra.Command, p engine.Project, r projectRow, now time.Time, more func(tw *tabwriter.Writer)) error {
	return a.out(cmd).emit(r, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Slug, r.shown, printable(r.StatusReason))
		if !r.KeepAliveUntil.IsZero() {
			fmt.Fprintf(tw, "%s\n", keptAliveText(r.KeepAliveUntil, now))
		}
		if r.NextStep != "" {
			fmt.Fprintf(tw, "next: %s\n", printable(r.NextStep))
		}
		switch {
		case p.Status == engine.StatusDeleted:
			fmt.Fprintf(tw, "its final snapshot is kept %d days: sailtui project undelete %s brings it back\n", int(engine.SnapshotRetention.Hours()/24), p.Slug)
		case p.Status == engine.StatusHibernated && p.StatusReason != "" && strings.HasPrefix(p.StatusReason, "undeleted"):
			fmt.Fprintf(tw, "next: sailtui project wake %s\n", p.Slug)
		}
		if more != nil {
			more(tw)
		}
	})
}

func projectsCmd(a *app) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     "projects ls",
		Aliases: []string{"ps"},
		Short:   "List projects",
		Example: "  sailtui projects ls\n  sailtui projects ls -o json",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] != "ls" {
				return fmt.Errorf("unknown subcommand %q (did you mean: sailtui projects ls): %w", args[0], engine.ErrBadInput)
			}
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			ps, err := eng.ListProjects(cmd.Context(), engine.ProjectFilter{IncludeDeleted: all})
			if err != nil {
				return fmt.Errorf("list projects: %w", err)
			}
			now := eng.Now()
			rows := make([]projectRow, len(ps))
			for i, p := range ps {
				rows[i] = rowOf(p, now)
			}
			return a.out(cmd).emit(rows, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "SLUG\tNAME\tSTATUS\tLAST ACTIVITY\tOWNER")
				for _, r := range rows {
					st := r.shown
					if r.Operation != "" {
						st += " (" + r.Operation + ")"
					}
					if !r.KeepAliveUntil.IsZero() {
						st += " · " + keptAliveText(r.KeepAliveUntil, now)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Slug, printable(r.Name), st, activityText(r, now), printable(r.Owner))
				}
				// Under the table, so its columns stay as they are: each failed project's way on.
				for _, r := range rows {
					switch {
					case r.NextStep != "":
						fmt.Fprintf(tw, "\n%s is failed: %s\n  next: %s\n", r.Slug, printable(r.StatusReason), printable(r.NextStep))
					case r.shown != r.Status:
						fmt.Fprintf(tw, "\n%s: %s\n  next: sailtui containers ls %s and sailtui logs %s NAME show why; sailtui project start %s tries again\n",
							r.Slug, printable(r.StatusReason), r.Slug, r.Slug, r.Slug)
					}
				}
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include deleted projects")
	return cmd
}

// keptAliveText says until when a keep-alive holds the sweep off, on this machine's clock; a
// keep-alive is at most SAILTUI_MAX_KEEP_ALIVE long, so the date is said only past a day.
func keptAliveText(until, now time.Time) string {
	if until.Sub(now) > 20*time.Hour {
		return "kept alive until " + until.Local().Format("Jan 2 15:04")
	}
	return "kept alive until " + until.Local().Format("15:04")
}

// activityText is the LAST ACTIVITY cell: its age and the door it came through, "3m ago · http".
func activityText(r projectRow, now time.Time) string {
	s := ago(r.LastActivity, now)
	if r.LastActivitySource != "" && !r.LastActivity.IsZero() {
		s += " · " + printable(r.LastActivitySource)
	}
	return s
}

func projectCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "project", Short: "Create, start, stop, hibernate, wake, remove, undelete or describe a project"}
	var from, owner string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a project (from a directory: every directory with a TESSLATE.md becomes a container)",
		Example: `  sailtui project create shop --from ./shop
  sailtui project create scratch`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			if owner == "" {
				owner = os.Getenv("USER")
			}
			ctx, done := a.withProgress(cmd.Context())
			p, err := eng.CreateProject(ctx, engine.CreateRequest{Name: args[0], Owner: owner, FromDir: from})
			done()
			if err != nil {
				return err
			}
			return printWithContainers(a, cmd, eng, p)
		},
	}
	create.Flags().StringVar(&from, "from", "", "directory to copy in")
	create.Flags().StringVar(&owner, "owner", "", "owner (default $USER)")

	action := func(use, short string, destructive bool, run func(*engine.Engine, context.Context, string) (engine.Project, error)) *cobra.Command {
		c := &cobra.Command{
			Use: use + " SLUG", Short: short, Args: cobra.ExactArgs(1),
			Example: fmt.Sprintf("  sailtui project %s shop", use),
			RunE: func(cmd *cobra.Command, args []string) error {
				eng, err := a.engine(cmd.Context())
				if err != nil {
					return err
				}
				if destructive {
					if err := confirm(a.cfg, fmt.Sprintf("%s project %s", use, args[0])); err != nil {
						return err
					}
				}
				before := lookBefore(cmd.Context(), eng, args[0])
				ctx, done := a.withProgress(cmd.Context())
				p, err := run(eng, ctx, args[0])
				done()
				if err != nil && cmd.Context().Err() != nil {
					return interruptedReport(cmd.Context(), eng, use, args[0], before)
				}
				if err != nil {
					return err
				}
				if use == "start" || use == "wake" {
					return printWithContainers(a, cmd, eng, p)
				}
				return printProject(a, cmd, p, eng.Now())
			},
		}
		if destructive {
			c.Flags().BoolVarP(&a.cfg.Yes, "yes", "y", false, "do not ask for confirmation")
		}
		return c
	}
	describe := &cobra.Command{
		Use: "describe SLUG", Short: "Show the runtime's own view of a project (processes, ports, storage)",
		Args: cobra.ExactArgs(1), Example: "  sailtui project describe shop",
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			text, err := eng.Describe(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.cfg.Output == "json" {
				p, err := eng.Project(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				d := describeRow{Runtime: eng.Mode(), Description: text, LastActivity: p.LastActivity,
					LastActivitySource: p.LastActivitySource, LastActivityActor: p.LastActivityActor}
				if p.KeptAlive(eng.Now()) {
					d.KeepAliveUntil = p.KeepAliveUntil
				}
				return a.out(cmd).emit(d, nil)
			}
			// The runtime's view quotes what projects hold (directories, commands, images).
			fmt.Fprint(cmd.OutOrStdout(), printableLines(text))
			return nil
		},
	}
	var source string
	touch := &cobra.Command{
		Use:   "touch SLUG",
		Short: "Record activity on a project (what a platform calls while its IDE or agent works in it)",
		Long: `Record activity on a project: the idle sweep counts its idle time from now. --source names
the door (default touch), shown beside the last activity in projects ls and project describe.`,
		Example: "  sailtui project touch shop --source ide",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Checked before the store is opened: a bad source is the caller's mistake (exit 2).
			if err := engine.CheckSource(source); err != nil {
				return err
			}
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			p, err := eng.Touch(cmd.Context(), args[0], source)
			if err != nil {
				return err
			}
			return printProject(a, cmd, p, eng.Now())
		},
	}
	touch.Flags().StringVar(&source, "source", engine.SourceTouch, "the door the activity came through (a short word: ide, agent, http)")
	var keepFor time.Duration
	var cancelKeep bool
	keepAlive := &cobra.Command{
		Use:   "keep-alive SLUG (--for DURATION | --cancel)",
		Short: "Keep the idle sweep off a project for a while (a job left running unattended)",
		Long: `Keep the idle sweep off a project until DURATION from now, however long it goes without other
activity; at most SAILTUI_MAX_KEEP_ALIVE (12h). It counts as activity (source keep-alive), and a
new keep-alive replaces the one before. --cancel ends it: the project's idle time counts again
from its last activity.`,
		Example: "  sailtui project keep-alive shop --for 2h\n  sailtui project keep-alive shop --cancel",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cancelKeep == cmd.Flags().Changed("for") {
				return fmt.Errorf("project keep-alive takes --for DURATION or --cancel (one of them): %w", engine.ErrBadInput)
			}
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			var p engine.Project
			if cancelKeep {
				p, err = eng.CancelKeepAlive(cmd.Context(), args[0])
			} else {
				p, err = eng.KeepAlive(cmd.Context(), args[0], keepFor)
			}
			if err != nil {
				return err
			}
			return printProject(a, cmd, p, eng.Now())
		},
	}
	keepAlive.Flags().DurationVar(&keepFor, "for", 0, "how long from now (Go duration: 90m, 2h)")
	keepAlive.Flags().BoolVar(&cancelKeep, "cancel", false, "end the keep-alive")
	var historyLimit int
	history := &cobra.Command{
		Use:   "history SLUG",
		Short: "Why a project is awake, asleep or about to sleep: its operations, activity and warnings",
		Long: `A project's history, newest first: every operation (who, started, finished, outcome, error),
the activity that kept it up (one line per door per quiet spell of 5 minutes: first and last
touch, how many, the newest toucher) and every idle warning. The store keeps the newest 1,000
activity and warning lines per project; the operations are the journal's.`,
		Example: "  sailtui project history shop\n  sailtui project history shop -o json --limit 20",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if historyLimit < 0 {
				return fmt.Errorf("--limit %d: want a positive number of lines (0: 200): %w", historyLimit, engine.ErrBadInput)
			}
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			_, lines, err := eng.History(cmd.Context(), args[0], historyLimit)
			if err != nil {
				return err
			}
			if lines == nil {
				lines = []engine.HistoryEntry{}
			}
			now := eng.Now()
			return a.out(cmd).emit(lines, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "WHEN\tWHAT\tBY\tDETAIL")
				for _, h := range lines {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", historyWhen(h, now), printable(h.What()), printable(cmp.Or(h.Actor, "-")), printable(h.Detail()))
				}
			})
		},
	}
	history.Flags().IntVar(&historyLimit, "limit", 200, "the newest this many lines")
	undelete := action("undelete", "Bring a removed project back from its final snapshot (within 30 days); project wake then restores it", false, (*engine.Engine).UndeleteProject)
	undelete.Long = `Bring a removed project back from its final snapshot, while that is kept (30 days): it comes
back hibernated on that snapshot, and sailtui project wake restores its files and starts it. Its
other snapshots stay deleted (sailtui snapshot undelete brings each back). When a new project has
taken its name, the removed one cannot come back until that name is free again; an ID from
sailtui projects ls --all -o json names it instead of the slug.`
	cmd.AddCommand(create,
		action("start", "Start every container (a hibernated project is woken first)", false, (*engine.Engine).StartProject),
		action("stop", "Stop every container; files stay", false, (*engine.Engine).StopProject),
		action("hibernate", "Snapshot the project and tear its environment down", false, (*engine.Engine).Hibernate),
		action("wake", "Restore a hibernated project and start it", false, (*engine.Engine).Wake),
		action("rm", "Remove a project (a final snapshot is kept 30 days)", true, (*engine.Engine).DeleteProject),
		undelete, history,
		describe,
		touch,
		keepAlive,
	)
	return cmd
}

// describeRow is the JSON of project describe: the runtime's view and the project's activity.
type describeRow struct {
	Runtime            string    `json:"runtime"`
	Description        string    `json:"description"`
	LastActivity       time.Time `json:"last_activity"`
	LastActivitySource string    `json:"last_activity_source,omitempty"`
	LastActivityActor  string    `json:"last_activity_actor,omitempty"`
	KeepAliveUntil     time.Time `json:"keep_alive_until,omitzero"`
}

// containerRow is the stable JSON of a container.
//
// Port is the port the service listens on: in docker mode inside its container (what its PORT
// is), the one it runs with when it runs or exited, else the one its next start gives it (the
// container's --port, else its TESSLATE.md's, else 3000). Elsewhere it is where this machine
// reaches a running container, else the container's --port (local: its declared port, its
// TESSLATE.md's too; 0 when none is known). HostPort is where this machine
// reaches it while it runs; ExitCode is set for an exited container only.
type containerRow struct {
	Name      string                `json:"name"`
	Directory string                `json:"directory"`
	Status    engine.ContainerState `json:"status"`
	Port      int                   `json:"port"`
	HostPort  int                   `json:"host_port,omitempty"`
	ExitCode  *int                  `json:"exit_code,omitempty"`
	URL       string                `json:"url"`
	// Live says whether the running container accepted a connection on its port just now:
	// its URL works only then. Absent when nothing was probed (not running).
	Live     *bool  `json:"live,omitempty"`
	LocalURL string `json:"local_url,omitempty"`
	PID      int    `json:"pid,omitempty"`
	// Detail says why a container is not running as asked (ImagePullBackOff, a crash loop,
	// unschedulable, failing probes), or what holds it (paused for a snapshot).
	Detail  string `json:"detail,omitempty"`
	Uptime  string `json:"uptime,omitempty"`
	Command string `json:"command,omitempty"`
	// Kind is app, service or external; a service has its own image and data volume.
	Kind     string            `json:"kind"`
	Image    string            `json:"image,omitempty"`
	DataPath string            `json:"data_path,omitempty"`
	Volume   string            `json:"volume,omitempty"`
	Endpoint string            `json:"endpoint,omitempty"`
	Exports  map[string]string `json:"exports,omitempty"`
	Primary  bool              `json:"primary,omitempty"`
	// ConnectsTo are the containers whose exports this one gets (sailtui connect), in its
	// environment from the start after the connection was made.
	ConnectsTo []string `json:"connects_to,omitempty"`
	// Usage is what a running container uses now (CPU in cores, memory in bytes); absent when
	// it was not measured: it does not run, or the runtime cannot measure (see the note on
	// stderr).
	Usage *engine.ContainerUsage `json:"usage,omitempty"`
}

func containersCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "containers ls SLUG",
		Short:   "List a project's containers with their state, port and URL",
		Example: "  sailtui containers ls shop -o json",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				if args[0] != "ls" {
					return fmt.Errorf("unknown subcommand %q (did you mean: sailtui containers ls SLUG): %w", args[0], engine.ErrBadInput)
				}
				args = args[1:]
			} else if args[0] == "ls" {
				return fmt.Errorf("containers ls takes the project whose containers to list: sailtui containers ls SLUG (sailtui projects ls lists the projects): %w", engine.ErrBadInput)
			}
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			l, err := listContainers(cmd.Context(), eng, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			for _, v := range l.views {
				if why := v.Status.RouteProblem; why != "" {
					// Once, not per row: it is the cluster's, not a container's.
					defer fmt.Fprintf(cmd.ErrOrStderr(), "note: URLs marked (not served): %s\n", printable(why))
					break
				}
			}
			return a.out(cmd).emit(l.rows, func(tw *tabwriter.Writer) { l.table(tw, true) })
		},
	}
}

// measureUsage starts measuring what the project's containers use, beside the listing (a
// first measurement samples for half a second or more); the function it returns waits for the
// answer. When there is none, the reason goes to errw once, not a failure per row: the
// listing stands without it.
func measureUsage(ctx context.Context, eng *engine.Engine, ref string) func(errw io.Writer) map[string]engine.ContainerUsage {
	type answer struct {
		u   map[string]engine.ContainerUsage
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		u, err := eng.Usage(ctx, ref)
		ch <- answer{u, err}
	}()
	return func(errw io.Writer) map[string]engine.ContainerUsage {
		a := <-ch
		switch {
		case errors.Is(a.err, engine.ErrNotAvailable):
			fmt.Fprintf(errw, "note: %s\n", printable(a.err.Error()))
		case a.err != nil:
			fmt.Fprintf(errw, "warning: CPU and memory not measured: %s\n", printable(a.err.Error()))
		}
		return a.u
	}
}

// saysExitCode reports a detail that only repeats the exit code the status shows.
func saysExitCode(r containerRow) bool {
	return r.ExitCode != nil && (r.Detail == fmt.Sprintf("exited with code %d", *r.ExitCode) || r.Detail == fmt.Sprintf("exit %d", *r.ExitCode))
}

// liveWord is the LIVE column: whether the port answered ("yes", "no"), "-" when not probed.
func liveWord(live *bool) string {
	switch {
	case live == nil:
		return "-"
	case *live:
		return "yes"
	}
	return "no"
}

// containerSource is what a container runs from, for tables: an app's directory, a service's
// image and data volume, an external service's endpoint.
func containerSource(v engine.ContainerView) string {
	switch v.Kind {
	case engine.KindService:
		if v.Status.Volume != "" {
			return v.Image + " (volume " + v.Status.Volume + " at " + v.DataPath + ")"
		}
		return v.Image + " (data at " + v.DataPath + ")"
	case engine.KindExternal:
		return v.Endpoint
	}
	return v.Directory
}

// servicePort is a container's port as containerRow defines it.
func servicePort(ctx context.Context, eng *engine.Engine, p engine.Project, v engine.ContainerView) int {
	if v.Status.Port > 0 {
		return v.Status.Port // what it runs with
	}
	if eng.Mode() == "docker" {
		// Not made yet: what a start would give it, read as a start reads it.
		if spec, err := eng.StartSpecFor(ctx, p, v.Container); err == nil && spec.Port > 0 {
			return spec.Port
		}
		if v.Port > 0 {
			return v.Port
		}
		return docker.DefaultPort
	}
	if v.Status.HostPort > 0 {
		return v.Status.HostPort
	}
	if eng.Mode() == "local" && v.Runs() {
		// Not running: the port it declares, TESSLATE.md's too, read as a start reads it (the
		// files are on this machine); it runs on a free port of this machine, told the
		// declared one in SAILTUI_DECLARED_PORT.
		if spec, err := eng.StartSpecFor(ctx, p, v.Container); err == nil && spec.DeclaredPort() > 0 {
			return spec.DeclaredPort()
		}
	}
	return v.Port
}

func containerCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "container", Short: "Add, remove, start or stop one container"}
	var spec engine.ContainerSpec
	var env, exports []string
	var service bool
	add := &cobra.Command{
		Use:   "add SLUG NAME",
		Short: "Add a container (with --git, clone a template into its directory when empty; with --service, a service of its own image)",
		Example: `  sailtui container add shop api --dir api --port 8000 --command 'uvicorn main:app --port $PORT'
  sailtui container add shop web --dir web --git https://example.com/templates/vite.git --branch main
  sailtui container add shop db --service --image postgres:16 --port 5432 --env POSTGRES_PASSWORD=dev \
    --export 'DATABASE_URL=postgres://postgres:${POSTGRES_PASSWORD}@${HOST}:${PORT}/postgres'
  sailtui connect shop api db`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			spec.Name = args[1]
			if service {
				if spec.Image == "" {
					return fmt.Errorf("container add --service: a service runs an image of its own; give it with --image (e.g. --image postgres:16): %w", engine.ErrBadInput)
				}
				spec.Kind, spec.Directory = engine.KindService, "."
				if spec.DataPath == "" {
					spec.DataPath = tesslate.DataPathFor(spec.Image)
				}
				if spec.Port == 0 {
					spec.Port = tesslate.Infra{Image: spec.Image}.ServicePort()
				}
			} else if spec.DataPath != "" {
				return fmt.Errorf("container add: --data is where a service's volume is mounted; add --service: %w", engine.ErrBadInput)
			}
			if spec.Directory == "" {
				spec.Directory = args[1]
			}
			spec.Env, err = parseEnv("env", env)
			if err != nil {
				return err
			}
			if spec.Exports, err = parseEnv("export", exports); err != nil {
				return err
			}
			c, err := eng.AddContainer(cmd.Context(), args[0], spec)
			if err != nil {
				return err
			}
			row := containerRow{Name: c.Name, Directory: c.Directory, Status: engine.ContainerStopped, Port: c.Port, Command: c.Command,
				Kind: c.Kind.String(), Image: c.Image, DataPath: c.DataPath, Exports: c.Exports}
			return a.out(cmd).emit(row, func(tw *tabwriter.Writer) {
				if c.IsService() {
					fmt.Fprintf(tw, "added service %s (%s, data at %s)\n", c.Name, printable(c.Image), printable(c.DataPath))
					return
				}
				fmt.Fprintf(tw, "added %s (%s)\n", c.Name, printable(c.Directory))
			})
		},
	}
	add.Flags().StringVar(&spec.Directory, "dir", "", "directory inside the project (default: NAME)")
	add.Flags().IntVar(&spec.Port, "port", 0, "port the service listens on (default: from TESSLATE.md)")
	add.Flags().StringVar(&spec.Command, "command", "", "startup command (default: from TESSLATE.md)")
	add.Flags().StringVar(&spec.GitURL, "git", "", "template repository to clone into the directory")
	add.Flags().StringVar(&spec.GitBranch, "branch", "", "template branch")
	add.Flags().BoolVar(&spec.MakeDir, "mkdir", false, "make the directory (empty) when the project has none of that name")
	add.Flags().StringArrayVar(&env, "env", nil, "KEY=VALUE environment (repeatable)")
	add.Flags().BoolVar(&service, "service", false, "a service container (a database): runs --image with a data volume of its own (docker and kubernetes modes)")
	add.Flags().StringVar(&spec.Image, "image", "", "the image: a service's own, or an app's instead of the dev-server image")
	add.Flags().StringVar(&spec.DataPath, "data", "", "where a service's data volume is mounted (default by image: postgres /var/lib/postgresql/data, mysql /var/lib/mysql, redis /data, mongo /data/db, else /data)")
	add.Flags().StringArrayVar(&exports, "export", nil, "KEY=VALUE given to every container connected to this one; ${HOST}, ${PORT} and ${ENVKEY} resolve against this one (repeatable)")

	simple := func(use, short string, run func(eng *engine.Engine, ctx context.Context, slug, name string) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " SLUG NAME", Short: short, Args: cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				eng, err := a.engine(cmd.Context())
				if err != nil {
					return err
				}
				if err := run(eng, cmd.Context(), args[0], args[1]); err != nil {
					return err
				}
				return a.out(cmd).emit(map[string]string{"project": args[0], "container": args[1], "done": use},
					func(tw *tabwriter.Writer) { fmt.Fprintf(tw, "%s %s/%s\n", use, args[0], args[1]) })
			},
		}
	}
	cmd.AddCommand(add,
		simple("rm", "Remove a container (its files stay)", (*engine.Engine).RemoveContainer),
		simple("start", "Start one container", func(eng *engine.Engine, ctx context.Context, s, n string) error {
			_, err := eng.StartContainer(ctx, s, n)
			return err
		}),
		simple("stop", "Stop one container", (*engine.Engine).StopContainer),
	)
	return cmd
}

func parseEnv(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want KEY=VALUE: %w", flag, kv, engine.ErrBadInput)
		}
		m[k] = v
	}
	return m, nil
}

// historyWhen is a line's time on this machine's clock with its age.
func historyWhen(h engine.HistoryEntry, now time.Time) string {
	return h.When(time.Local) + " (" + ago(h.At, now) + ")"
}
