package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// containerListing is a project's containers as containers ls shows them, which the actions
// that start a project print too.
type containerListing struct {
	p     engine.Project
	views []engine.ContainerView
	rows  []containerRow
	conns []engine.Connection
}

// listContainers reads ref's containers with their state, port, URL and whether the port
// answers. With usageTo it also measures what each uses (CPU, memory; half a second or more
// the first time), and a note on why it could not goes there.
func listContainers(ctx context.Context, eng *engine.Engine, ref string, usageTo io.Writer) (containerListing, error) {
	var used map[string]engine.ContainerUsage
	var usage func(io.Writer) map[string]engine.ContainerUsage
	if usageTo != nil {
		usage = measureUsage(ctx, eng, ref)
	}
	p, views, err := eng.ProbeContainers(ctx, ref)
	if err != nil {
		return containerListing{}, err
	}
	if usage != nil {
		used = usage(usageTo)
	}
	conns, err := eng.Connections(ctx, ref)
	if err != nil {
		return containerListing{}, err
	}
	rows := make([]containerRow, len(views))
	for i, v := range views {
		port := servicePort(ctx, eng, p, v)
		rows[i] = containerRow{Name: v.Name, Directory: v.Directory, Status: v.Status.State, Port: port,
			HostPort: v.Status.HostPort, URL: v.Status.URL, LocalURL: v.Status.LocalURL, PID: v.Status.PID, Command: v.Command,
			Detail: v.Status.Detail, Kind: v.Kind.String(), Image: v.Image, DataPath: v.DataPath, Volume: v.Status.Volume,
			Endpoint: v.Endpoint, Exports: v.Exports, Primary: v.Primary, Live: v.Status.PortAnswers}
		for _, cn := range conns {
			if cn.From == v.Name {
				rows[i].ConnectsTo = append(rows[i].ConnectsTo, cn.To)
			}
		}
		if u, ok := used[v.Name]; ok {
			rows[i].Usage = &u
		}
		if v.Status.State == engine.ContainerExited {
			code := v.Status.ExitCode
			rows[i].ExitCode = &code
		}
		if !v.Status.StartedAt.IsZero() && v.Status.State == engine.ContainerRunning {
			rows[i].Uptime = time.Since(v.Status.StartedAt).Round(time.Second).String()
		}
	}
	return containerListing{p: p, views: views, rows: rows, conns: conns}, nil
}

// table writes the listing as containers ls does; usage adds the CPU and MEM columns.
func (l containerListing) table(tw *tabwriter.Writer, usage bool) {
	head := "NAME\tKIND\tSOURCE\tSTATUS\tPORT\tLIVE\tURL\tUPTIME"
	if usage {
		head += "\tCPU\tMEM"
	}
	fmt.Fprintln(tw, head)
	for i, r := range l.rows {
		status := string(r.Status)
		if r.ExitCode != nil {
			status += fmt.Sprintf(" (%d)", *r.ExitCode)
		}
		if r.Detail != "" && r.Status != engine.ContainerRunning && !saysExitCode(r) {
			// Why it does not run is what an operator looks for first.
			status += ": " + clip(printable(r.Detail), 70)
		}
		url := r.URL
		if st := l.views[i].Status; st.Unrouted && st.LocalURL != "" {
			url = st.LocalURL // the route would not resolve: no router is configured
		} else if st.RouteProblem != "" {
			url += " (not served)" // why: once, on stderr (containers ls)
		}
		name := r.Name
		if r.Primary {
			name += " *" // the primary app, shown first by the console
		}
		port := "-" // none known: nothing declared, or a hibernated project's files are in its snapshot
		if r.Port > 0 {
			port = fmt.Sprint(r.Port)
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", name, r.Kind, printable(containerSource(l.views[i])), status, port, liveWord(r.Live), url, r.Uptime)
		if usage {
			cpu, mem := "-", "-"
			if r.Usage != nil {
				cpu, mem = r.Usage.CPUText(), r.Usage.MemoryText()
			}
			line += "\t" + cpu + "\t" + mem
		}
		fmt.Fprintln(tw, line)
	}
	if len(l.conns) > 0 {
		// A table of its own (the blank line ends the first one's columns): what each
		// connection puts in its FROM's environment at FROM's next start.
		fmt.Fprintln(tw, "\nCONNECTION\tGIVES")
		for _, cn := range l.conns {
			gives := "-"
			if keys := exportKeys(l.views, cn.To); len(keys) > 0 {
				gives = strings.Join(keys, ", ")
			}
			fmt.Fprintf(tw, "%s → %s\t%s\n", cn.From, cn.To, printable(gives))
		}
	}
}
