package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/capped"
)

func logsCmd(a *app) *cobra.Command {
	var opts engine.LogOptions
	cmd := &cobra.Command{
		Use: "logs SLUG CONTAINER", Short: "Print a container's log (-f follows it)", Args: cobra.ExactArgs(2),
		Example: "  sailtui logs shop web --tail 100 -f",
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			// Following a container that is not running would wait, silently, for someone to
			// start it (as docker logs -f of a stopped container does not): print what it
			// left and say why it ends. The console's log pane waits, with its state shown.
			stopped := ""
			if opts.Follow {
				if st, ok := containerState(cmd.Context(), eng, args[0], args[1]); ok && st != engine.ContainerRunning && st != engine.ContainerStarting {
					stopped, opts.Follow = string(st), false
				}
			}
			jsonOut := a.cfg.Output == "json"
			// JSON carries each line's time in a field of its own, asked for or not.
			opts.Timestamps = opts.Timestamps || jsonOut
			rc, err := eng.Logs(cmd.Context(), args[0], args[1], opts)
			if err != nil {
				return err
			}
			defer rc.Close()
			if jsonOut {
				err = logLines(cmd.OutOrStdout(), rc, args[0], args[1])
			} else {
				_, err = io.Copy(cmd.OutOrStdout(), rc)
			}
			if err != nil && cmd.Context().Err() != nil {
				return nil // interrupted while following: the normal way out
			}
			if err == nil && stopped != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "sailtui: %s/%s is %s: that is its whole log, not following (sailtui container start %s %s starts it)\n",
					args[0], args[1], stopped, args[0], args[1])
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new lines")
	cmd.Flags().IntVar(&opts.Tail, "tail", 0, "start with the last N lines (0: all)")
	cmd.Flags().BoolVarP(&opts.Timestamps, "timestamps", "t", false, "put the time each line was written in front of it (RFC 3339, UTC)")
	return cmd
}

// logLine is the stable JSON of one log line (logs -o json prints one per line, as they come).
// Time is when the line was written, as the runtime recorded it; it is left out for a line
// that has none (written before sailtui kept times).
type logLine struct {
	Project   string    `json:"project"`
	Container string    `json:"container"`
	Time      time.Time `json:"time,omitzero"`
	Line      string    `json:"line"`
}

// logLines copies a log as JSON lines. A line is cut at maxLogLine bytes (the rest follows as
// further lines), so one endless line cannot hold the output back or grow without bound.
func logLines(w io.Writer, r io.Reader, project, container string) error {
	const maxLogLine = 1 << 20
	br := bufio.NewReaderSize(r, 64<<10)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		line = append(line, chunk...)
		if err == nil && isPrefix && len(line) < maxLogLine {
			continue
		}
		if len(line) > 0 || (err == nil && !isPrefix) {
			at, text, _ := engine.ParseLogLine(line)
			if eerr := enc.Encode(logLine{project, container, at, string(text)}); eerr != nil {
				return eerr
			}
		}
		line = line[:0]
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// containerState is the state of one container as the runtime reports it; ok is false when
// it cannot be told (the engine's error is then the one the caller meets next).
func containerState(ctx context.Context, eng *engine.Engine, slug, name string) (engine.ContainerState, bool) {
	_, views, err := eng.Containers(ctx, slug)
	if err != nil {
		return "", false
	}
	for _, v := range views {
		if v.Name == name {
			return v.Status.State, v.Status.State != engine.ContainerUnknown
		}
	}
	return "", false
}

func execCmd(a *app) *cobra.Command {
	var req engine.ExecRequest
	var interactive, tty bool
	cmd := &cobra.Command{
		Use:   "exec SLUG CONTAINER -- CMD [ARG...]",
		Short: "Run a command in a container's directory; exits with the command's exit code",
		Long: `Run a command in a container's directory; exits with the command's exit code.

With -it the command gets a terminal of its own (a TTY), as with docker exec -it, in every
runtime: a shell with its prompt and job control, editors, pagers; what you type goes to it
unprocessed (ctrl+c interrupts the command there, not sailtui), the terminal's size follows this
window's, and exit ends it. -t alone gives it a terminal without your input. -t needs this input
to be a terminal. A terminal exec has no timeout unless --timeout is given.

Without -t, output and input are streamed, as with docker exec -i (local and docker modes):
stdout and stderr arrive as the command writes them, and input that is piped or redirected is
passed to the command, which sees its end when it ends. A terminal's input is passed only with
-i, line by line; no TTY is allocated: the command's stdin, stdout and stderr are pipes. The
kubernetes runtime prints the output once the command is done and cannot pass input: piped or
redirected input (or -i) is refused there with exit 2 before the command runs; < /dev/null is
no input. With -o json nothing is streamed: stdout and stderr come in the JSON, each capped at
--max-output; input is passed as without it.`,
		Example: `  sailtui exec -it shop web -- sh
  sailtui exec shop web -- ls -la
  sailtui exec shop api --timeout 30s -- sh -c 'echo hi > note.txt'
  sailtui exec shop db -- psql < dump.sql`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 2 {
				return fmt.Errorf("exec: put -- between the container and the command: %w", engine.ErrBadInput)
			}
			if tty && a.cfg.Output == "json" {
				return fmt.Errorf("exec -t: a terminal's output cannot be JSON; drop -t or -o json: %w", engine.ErrBadInput)
			}
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			req.Argv = args[2:]
			var res engine.ExecResult
			if tty {
				if !cmd.Flags().Changed("timeout") {
					req.Timeout = 0 // a shell lasts as long as its user wants
				}
				res, err = execOnTerminal(cmd, eng, args[0], args[1], req, interactive)
			} else if in := execInput(cmd.InOrStdin(), interactive); a.cfg.Output == "json" && in == nil {
				res, err = eng.Exec(cmd.Context(), args[0], args[1], req)
			} else if a.cfg.Output == "json" {
				// Input is passed with -o json too; the output goes to the JSON, capped.
				out := capped.NewOutput(req.MaxOutput)
				res, err = eng.ExecStream(cmd.Context(), args[0], args[1], req, engine.ExecStreams{Stdin: in, Stdout: out.Stdout, Stderr: out.Stderr})
				res = out.Result(res.ExitCode, res.TimedOut)
			} else {
				// The engine refuses input a runtime cannot pass: never dropped unseen.
				res, err = eng.ExecStream(cmd.Context(), args[0], args[1], req,
					engine.ExecStreams{Stdin: in, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
			}
			if err != nil {
				return err
			}
			if a.cfg.Output == "json" {
				if err := json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
					Stdout    string `json:"stdout"`
					Stderr    string `json:"stderr"`
					ExitCode  int    `json:"exit_code"`
					TimedOut  bool   `json:"timed_out"`
					Truncated bool   `json:"truncated"`
				}{string(res.Stdout), string(res.Stderr), res.ExitCode, res.TimedOut, res.Truncated}); err != nil {
					return err
				}
			} else {
				if res.TimedOut {
					fmt.Fprintf(cmd.ErrOrStderr(), "sailtui: exec timed out after %s; the command was killed\n", req.Timeout)
				}
				if res.Truncated {
					fmt.Fprintln(cmd.ErrOrStderr(), "sailtui: output was truncated")
				}
			}
			if res.ExitCode != 0 {
				return exitError{res.ExitCode}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&req.Timeout, "timeout", 10*time.Minute, "kill the command after this long (with -t: only when given)")
	cmd.Flags().StringVar(&req.Dir, "workdir", "", "working directory relative to the container's directory")
	cmd.Flags().IntVar(&req.MaxOutput, "max-output", 16<<20, "cap on stdout and stderr each, in bytes (-o json, and runtimes that do not stream)")
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "pass a terminal's input too (piped input always is)")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "run the command on a terminal of its own (-it: a shell)")
	return cmd
}

// execInput is the input an exec passes to its command, nil for none. As docker exec: a pipe
// or a file is input; a terminal only with -i (a command that never reads would otherwise sit
// on it); the null device (stdin of a cron job or a script run with < /dev/null) is none, so
// such a run works on a runtime that cannot pass input.
func execInput(stdin io.Reader, interactive bool) io.Reader {
	f, ok := stdin.(*os.File)
	if !ok {
		return stdin
	}
	if isTerminal(f) {
		if interactive {
			return f
		}
		return nil
	}
	if isNullDevice(f) {
		return nil
	}
	return f
}

// isNullDevice: f is os.DevNull (reads nothing, ever).
func isNullDevice(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

func filesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "files", Short: "List, read, write or remove project files (paths are relative to the project)"}
	ls := &cobra.Command{
		Use: "ls SLUG [PATH]", Short: "List a directory", Args: cobra.RangeArgs(1, 2),
		Example: "  sailtui files ls shop web/src",
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			dir := "."
			if len(args) == 2 {
				dir = args[1]
			}
			fis, err := eng.ListFiles(cmd.Context(), args[0], dir)
			if err != nil {
				return err
			}
			return a.out(cmd).emit(fis, func(tw *tabwriter.Writer) {
				for _, f := range fis {
					name := printable(f.Path)
					if f.Target != "" {
						name += " -> " + printable(f.Target)
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", f.Mode, f.Size, f.ModTime.Format(time.DateTime), name)
				}
			})
		},
	}
	get := &cobra.Command{
		Use: "get SLUG PATH", Short: "Write a file to stdout", Args: cobra.ExactArgs(2),
		Example: "  sailtui files get shop web/package.json",
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			return eng.ReadFile(cmd.Context(), args[0], args[1], cmd.OutOrStdout())
		},
	}
	put := &cobra.Command{
		Use: "put SLUG PATH", Short: "Replace a file with stdin", Args: cobra.ExactArgs(2),
		Example: "  echo 'hello' | sailtui files put shop web/public/hello.txt",
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			return eng.WriteFile(cmd.Context(), args[0], args[1], cmd.InOrStdin())
		},
	}
	rm := &cobra.Command{
		Use: "rm SLUG PATH", Short: "Remove a file or directory", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			if err := confirm(a.cfg, fmt.Sprintf("remove %s from %s", args[1], args[0])); err != nil {
				return err
			}
			return eng.DeleteFile(cmd.Context(), args[0], args[1])
		},
	}
	rm.Flags().BoolVarP(&a.cfg.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.AddCommand(ls, get, put, rm)
	return cmd
}

func eventsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "events",
		Short: "Stream status events until interrupted (every process's with PostgreSQL; the embedded store carries none between processes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			ch, err := eng.Subscribe(cmd.Context())
			if err != nil {
				return err
			}
			if a.cfg.DatabaseURL == "" {
				// The embedded store's events stay in the process that made them, and this one
				// makes none: without a word it would print nothing, forever.
				fmt.Fprintln(cmd.ErrOrStderr(), "note: the embedded SQLite store carries no events between processes, so this shows none of "+
					"another sailtui's changes; PostgreSQL (DATABASE_URL) carries every process's events, and the console (sailtui) "+
					"follows other processes' changes on SQLite too")
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			for ev := range ch {
				if a.cfg.Output == "json" {
					if err := enc.Encode(ev); err != nil {
						return err
					}
					continue
				}
				if ev.Kind == engine.EventIdleWarning {
					fmt.Fprintf(cmd.OutOrStdout(), "%s %s idle warning: %s\n", ev.Time.Format(time.TimeOnly), ev.Slug, printable(ev.Reason))
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s -> %s %s\n", ev.Time.Format(time.TimeOnly), ev.Slug, ev.From, ev.To, printable(ev.Reason))
			}
			return nil
		},
	}
}

// devserverCmd is the small static file server the demo's containers (and the test image) run.
func devserverCmd() *cobra.Command {
	var dir string
	var port int
	cmd := &cobra.Command{
		Use: "devserver", Short: "Serve a directory over HTTP (what demo containers run)", Args: cobra.NoArgs,
		Example: `  sailtui devserver --dir . --port 8080`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if port <= 0 {
				if p, err := strconv.Atoi(os.Getenv("PORT")); err == nil {
					port = p
				}
			}
			if port <= 0 || port > 65535 {
				return fmt.Errorf("devserver: give --port or PORT (1-65535): %w", engine.ErrBadInput)
			}
			host := os.Getenv("HOST")
			if host == "" {
				host = "0.0.0.0"
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				return fmt.Errorf("devserver: %w", err)
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return fmt.Errorf("devserver: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "devserver: serving %s on http://%s\n", dir, ln.Addr())
			mux := http.NewServeMux()
			mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
			files := http.FileServerFS(root.FS())
			mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(os.Stdout, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path)
				files.ServeHTTP(w, r)
			})
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-cmd.Context().Done()
				srv.Close()
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory to serve")
	cmd.Flags().IntVar(&port, "port", 0, "port (default $PORT)")
	return cmd
}
