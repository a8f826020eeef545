package local

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// Describe tells what the runtime sees of the project: its directory and, for each container
// in cs or with a run record, state, pid, port, uptime, URL and command.
func (r *Runtime) Describe(ctx context.Context, p engine.Project, cs []engine.Container) (string, error) {
	dir, err := r.projectDir(p)
	if err != nil {
		return "", fmt.Errorf("describe: %w", err)
	}
	exists, err := r.ProjectExists(ctx, p)
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	names, err := r.containerNames(p.Slug, cs)
	if err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "local runtime: project %s\n", p.Slug)
	if exists {
		fmt.Fprintf(&b, "directory: %s\n", dir)
	} else {
		fmt.Fprintf(&b, "directory: %s (missing)\n", dir)
	}
	fmt.Fprintf(&b, "logs: %s\n", r.logDir(p.Slug))
	if len(names) == 0 {
		b.WriteString("no containers\n")
		return b.String(), nil
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tSTATE\tPID\tPORT\tUPTIME\tURL\tCOMMAND")
	now := time.Now()
	// Commands the table had to shorten are written out whole below it.
	var whole []string
	for _, name := range names {
		rec, err := readRecordFile(r.recordPath(p.Slug, name))
		if err != nil {
			fmt.Fprintf(tw, "%s\tunknown\t-\t-\t-\t-\t%v\n", name, err)
			continue
		}
		st := r.status(name, rec)
		pid, port, uptime, url, command := "-", "-", "-", "-", "-"
		if rec != nil {
			command = oneLine(rec.Command, 60)
			if full := strings.TrimSpace(rec.Command); command != full {
				whole = append(whole, "\ncommand of "+name+":\n  "+strings.ReplaceAll(full, "\n", "\n  ")+"\n")
			}
		}
		state := string(st.State)
		if st.State == engine.ContainerRunning {
			pid = fmt.Sprint(st.PID)
			port = fmt.Sprint(st.HostPort)
			if rec.DeclaredPort > 0 && rec.DeclaredPort != st.HostPort {
				port += fmt.Sprintf(" (app %d)", rec.DeclaredPort)
			}
			uptime = now.Sub(st.StartedAt).Round(time.Second).String()
			url = st.URL
		} else if st.State == engine.ContainerExited && rec != nil && rec.ExitCode != nil {
			state = fmt.Sprintf("exited(%d)", *rec.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, state, pid, port, uptime, url, command)
	}
	if err := tw.Flush(); err != nil {
		return "", fmt.Errorf("describe %s: %w", p.Slug, err)
	}
	for _, w := range whole {
		b.WriteString(w)
	}
	return b.String(), nil
}

// oneLine shortens a startup script to its first command line for a table cell.
func oneLine(s string, width int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var first string
	n := 0
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if first == "" {
			first = l
		}
		n++
	}
	if n > 1 {
		first += " …"
	}
	if r := []rune(first); len(r) > width {
		first = string(r[:width-1]) + "…"
	}
	return first
}
