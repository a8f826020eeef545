package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func doctorCmd(a *app) *cobra.Command {
	var fix bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the store against the runtime and the object store; --fix applies the safe fixes",
		Long: `doctor compares what the store says with what the runtime and the object store hold:
  stuck-operation     an operation whose holder died or went silent past SAILTUI_OP_TIMEOUT
  storage             an active or failed project whose storage is gone (with the snapshot to
                      wake it from), or whose environment was never made (project start makes it)
  orphan-environment  a directory, network or namespace of no project
  missing-container   a container sailtui started and did not stop whose Docker container is
                      gone (removed by hand; project start recreates it)
  orphan-archive      an archive object of no snapshot
  missing-archive     a ready snapshot whose object is gone
Each finding comes with the command that sets it right. --fix finishes stuck operations,
marks an active or failed project without storage hibernated from its newest ready snapshot and
starts missing containers again; it never deletes anything. The exit status is 1 while findings remain, 0 when there are none.`,
		Example: "  sailtui doctor\n  sailtui doctor --fix -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			rep, err := eng.Doctor(cmd.Context(), fix)
			if err != nil {
				return err
			}
			err = a.out(cmd).emit(rep, func(tw *tabwriter.Writer) {
				if len(rep.Findings) == 0 {
					fmt.Fprintln(tw, "no findings")
				} else {
					fmt.Fprintln(tw, "CHECK\tPROJECT\tFINDING\tFIX")
				}
				for _, f := range rep.Findings {
					fixText := f.Fix
					switch {
					case f.Fixed:
						fixText = "fixed"
					case f.Error != "":
						fixText = "fix failed: " + f.Error
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Check, printable(f.Project), printable(f.Detail), printable(fixText))
				}
				if len(rep.Unsupported) > 0 {
					fmt.Fprintf(tw, "not checked here: %s\n", strings.Join(rep.Unsupported, ", "))
				}
			})
			if err != nil {
				return err
			}
			if !rep.OK() {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&fix, "fix", false, "apply the safe fixes (never deletes anything)")
	return cmd
}
