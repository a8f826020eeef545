package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sailtui/sailtui/engine"
)

// connectionRow is the stable JSON of a connect or disconnect: what FROM gets from TO (the
// keys of TO's exports) and whether FROM runs now, with the environment it started with.
type connectionRow struct {
	Project   string   `json:"project"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	Gives     []string `json:"gives"`
	Connected bool     `json:"connected"`
	// Running: FROM runs now and keeps its environment until its next start.
	Running bool `json:"running"`
}

func connectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "connect SLUG FROM TO",
		Short: "Give container FROM the exports of container TO (TO starts first)",
		Long: `Give container FROM the exports of container TO in its environment, each resolved against TO
(${HOST}, ${PORT} and TO's own env), and start TO before FROM. A running FROM keeps the
environment it started with: it gets the new one at its next start (sailtui container stop,
then start). sailtui containers ls shows the connections and what each gives.`,
		Example: `  sailtui container add shop db --service --image postgres:16 --env POSTGRES_PASSWORD=dev \
    --export 'DATABASE_URL=postgres://postgres:${POSTGRES_PASSWORD}@${HOST}:${PORT}/postgres'
  sailtui connect shop api db`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConnection(cmd, a, args, true)
		},
	}
}

func disconnectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "disconnect SLUG FROM TO",
		Short: "Take the exports of container TO out of FROM's environment (at its next start)",
		Long: `Remove the connection FROM -> TO: FROM no longer gets TO's exports, from its next start (a
running FROM keeps the environment it started with until then), and no longer waits for TO.`,
		Example: "  sailtui disconnect shop api db",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConnection(cmd, a, args, false)
		},
	}
}

// runConnection connects (or disconnects) args' FROM and TO and says what FROM gets, and when.
func runConnection(cmd *cobra.Command, a *app, args []string, connect bool) error {
	eng, err := a.engine(cmd.Context())
	if err != nil {
		return err
	}
	slug, from, to := args[0], args[1], args[2]
	if connect {
		err = eng.Connect(cmd.Context(), slug, from, to)
	} else {
		err = eng.Disconnect(cmd.Context(), slug, from, to)
	}
	if err != nil {
		return err
	}
	row := connectionRow{Project: slug, From: from, To: to, Connected: connect}
	row.Gives, row.Running = connectionFacts(cmd.Context(), eng, slug, from, to)
	return a.out(cmd).emit(row, func(tw *tabwriter.Writer) {
		when := "when it starts"
		if row.Running {
			when = fmt.Sprintf("at its next start; it runs now with the environment it started with (sailtui container stop %s %s, then start)", slug, from)
		}
		if !connect {
			gives := "nothing"
			if len(row.Gives) > 0 {
				gives = strings.Join(row.Gives, ", ")
			}
			fmt.Fprintf(tw, "disconnected %s/%s from %s: %s loses %s %s\n", slug, from, to, from, printable(gives), when)
			return
		}
		if len(row.Gives) == 0 {
			fmt.Fprintf(tw, "connected %s/%s to %s: %s has no exports, so %s gets nothing from it; %s starts first\n", slug, from, to, to, from, to)
			return
		}
		fmt.Fprintf(tw, "connected %s/%s to %s: %s gets %s %s\n", slug, from, to, from, printable(strings.Join(row.Gives, ", ")), when)
	})
}

// connectionFacts are the keys of to's exports and whether from runs now; what cannot be
// told is left out (the connection is made; this is only what the message says about it).
func connectionFacts(ctx context.Context, eng *engine.Engine, slug, from, to string) (gives []string, running bool) {
	_, views, err := eng.Containers(ctx, slug)
	if err != nil {
		return []string{}, false
	}
	for _, v := range views {
		if v.Name == from {
			running = v.Status.State == engine.ContainerRunning
		}
	}
	return exportKeys(views, to), running
}

// exportKeys are the keys of container name's exports, sorted: what a connection to it gives.
func exportKeys(views []engine.ContainerView, name string) []string {
	for _, v := range views {
		if v.Name == name && len(v.Exports) > 0 {
			return slices.Sorted(maps.Keys(v.Exports))
		}
	}
	return []string{}
}
