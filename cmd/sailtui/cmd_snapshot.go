package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sailtui/sailtui/engine"
)

// snapshotRow is the stable JSON of a timeline entry.
type snapshotRow struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
	SizeBytes int64  `json:"size_bytes"`
	DeletedAt string `json:"deleted_at,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	Error     string `json:"error,omitempty"`
	// Parts are the service volumes held besides the files (size_bytes is the files' archive);
	// total_bytes counts them all.
	Parts      []engine.SnapshotPart `json:"parts,omitempty"`
	TotalBytes int64                 `json:"total_bytes"`
	// CapacityBytes (total_capacity_bytes with the parts) is what a CSI driver reports: the
	// volume a restore needs, not data; size_bytes is then 0.
	CapacityBytes      int64 `json:"capacity_bytes,omitempty"`
	TotalCapacityBytes int64 `json:"total_capacity_bytes,omitempty"`
}

// sizeOf is a snapshot's size for tables: the total, and what each part holds when it has
// parts. What is known only as volume capacity (CSI) says so.
func (r snapshotRow) sizeOf() string {
	if r.TotalBytes == 0 && r.TotalCapacityBytes > 0 {
		return capacityText(r.TotalCapacityBytes)
	}
	if len(r.Parts) == 0 {
		return size(r.TotalBytes)
	}
	parts := []string{"files " + size(r.SizeBytes)}
	for _, p := range r.Parts {
		parts = append(parts, p.Name+" "+size(p.SizeBytes))
	}
	return size(r.TotalBytes) + " (" + strings.Join(parts, ", ") + ")"
}

// capacityText words a volume capacity so that it is not read as data.
func capacityText(n int64) string { return size(n) + " volume" }

func snapRow(s engine.Snapshot) snapshotRow {
	r := snapshotRow{ID: s.ID, Label: s.Label, Type: string(s.Type), Status: string(s.Status),
		CreatedAt: s.CreatedAt.UTC().Format("2006-01-02T15:04:05Z07:00"), SizeBytes: s.SizeBytes, SHA256: s.SHA256, Error: s.Error,
		Parts: s.Parts, TotalBytes: s.TotalBytes(), CapacityBytes: s.CapacityBytes, TotalCapacityBytes: s.TotalCapacity()}
	if !s.DeletedAt.IsZero() {
		r.DeletedAt = s.DeletedAt.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	return r
}

func printSnapshot(a *app, cmd *cobra.Command, s engine.Snapshot) error {
	r := snapRow(s)
	return a.out(cmd).emit(r, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Type, r.Status, r.sizeOf(), printable(r.Label))
	})
}

// printsSnapshot is the RunE of a command that changes one snapshot and answers with it: the
// engine is opened, do runs, and the snapshot it returns is printed.
func printsSnapshot(a *app, do func(cmd *cobra.Command, eng *engine.Engine, args []string) (engine.Snapshot, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		eng, err := a.engine(cmd.Context())
		if err != nil {
			return err
		}
		s, err := do(cmd, eng, args)
		if err != nil {
			return err
		}
		return printSnapshot(a, cmd, s)
	}
}

// confirmSnapshot resolves args[1] as a snapshot of project args[0] and asks the operator to
// confirm what (said of that snapshot) unless --yes was given.
func confirmSnapshot(cmd *cobra.Command, a *app, eng *engine.Engine, args []string, what func(engine.Snapshot) string) (engine.Snapshot, error) {
	snap, err := eng.ResolveSnapshot(cmd.Context(), args[0], args[1])
	if err != nil {
		return engine.Snapshot{}, err
	}
	if err := confirm(a.cfg, what(snap)); err != nil {
		return engine.Snapshot{}, err
	}
	return snap, nil
}

func snapshotCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "A project's snapshot timeline: list, create, restore, label, remove, undelete",
		Long: `Each project keeps up to 5 manual snapshots, plus the hibernation and safety snapshots the
engine takes itself. Restoring over a live project first takes a safety snapshot, so a restore
can be undone. Removed snapshots are kept 30 days, then purged; until then snapshot undelete
brings one back.`,
	}
	var all bool
	ls := &cobra.Command{
		Use: "ls SLUG", Short: "List the timeline, newest first", Args: cobra.ExactArgs(1),
		Example: "  sailtui snapshot ls shop\n  sailtui snapshot ls shop --all -o json",
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			snaps, err := eng.Snapshots(cmd.Context(), args[0], all)
			if err != nil {
				return err
			}
			rows := make([]snapshotRow, len(snaps))
			manual := 0
			for i, s := range snaps {
				rows[i] = snapRow(s)
				if s.Type == engine.SnapshotManual && s.Status != engine.SnapshotDeleted {
					manual++
				}
			}
			return a.out(cmd).emit(rows, func(tw *tabwriter.Writer) {
				if !all {
					fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tCREATED\tSIZE\tLABEL")
					for _, r := range rows {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Type, r.Status, r.CreatedAt, r.sizeOf(), printable(r.Label))
					}
				} else {
					// Until when snapshot undelete can bring a deleted one back.
					fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tCREATED\tSIZE\tKEPT UNTIL\tLABEL")
					for i, r := range rows {
						kept := "-"
						if s := snaps[i]; s.Status == engine.SnapshotDeleted && s.Error == "" {
							kept = s.DeletedAt.Add(engine.SnapshotRetention).UTC().Format("2006-01-02T15:04:05Z07:00")
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Type, r.Status, r.CreatedAt, r.sizeOf(), kept, printable(r.Label))
					}
				}
				fmt.Fprintf(tw, "manual snapshots: %d/%d\n", manual, engine.MaxManualSnapshots)
			})
		},
	}
	ls.Flags().BoolVar(&all, "all", false, "include deleted snapshots (kept 30 days)")

	var label string
	create := &cobra.Command{
		Use: "create SLUG", Short: "Take a manual snapshot; returns once it is ready or failed", Args: cobra.ExactArgs(1),
		Example: `  sailtui snapshot create shop --label "before upgrading react"`,
		RunE: printsSnapshot(a, func(cmd *cobra.Command, eng *engine.Engine, args []string) (engine.Snapshot, error) {
			ctx, done := a.withProgress(cmd.Context())
			defer done()
			return eng.CreateSnapshot(ctx, args[0], label)
		}),
	}
	create.Flags().StringVar(&label, "label", "", "label shown in the timeline")

	restore := &cobra.Command{
		Use: "restore SLUG SNAPSHOT", Short: "Restore a snapshot (a safety snapshot of the current state is taken first)", Args: cobra.ExactArgs(2),
		Long:    "Restore a snapshot (a safety snapshot of the current state is taken first).\n\n" + snapshotArg,
		Example: "  sailtui snapshot restore shop manual-20261129-101500-1a2b3c4d5e6f --yes\n  sailtui snapshot restore shop \"known good\" --yes\n  sailtui snapshot restore shop manual-20261129-1015 --yes",
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine(cmd.Context())
			if err != nil {
				return err
			}
			snap, err := confirmSnapshot(cmd, a, eng, args, func(s engine.Snapshot) string {
				return fmt.Sprintf("replace the files of %s with snapshot %s (%q)", args[0], s.ID, s.Label)
			})
			if err != nil {
				return err
			}
			ctx, done := a.withProgress(cmd.Context())
			res, err := eng.RestoreSnapshot(ctx, args[0], snap.ID)
			done()
			if err != nil {
				return err
			}
			return a.out(cmd).emit(map[string]any{"project": rowOf(res.Project, eng.Now()), "restored": snapRow(res.Restored), "safety": safetyRow(res.Safety)},
				func(tw *tabwriter.Writer) {
					fmt.Fprintf(tw, "restored %s to %s\n", res.Project.Slug, res.Restored.ID)
					if res.Safety.ID != "" {
						fmt.Fprintf(tw, "the state before is in safety snapshot %s (undo: sailtui snapshot restore %s %s)\n", res.Safety.ID, res.Project.Slug, res.Safety.ID)
					}
				})
		},
	}
	restore.Flags().BoolVarP(&a.cfg.Yes, "yes", "y", false, "do not ask for confirmation")

	relabel := &cobra.Command{
		Use: "label SLUG SNAPSHOT --label TEXT", Short: "Change a snapshot's label", Args: cobra.ExactArgs(2),
		Long:    "Change a snapshot's label.\n\n" + snapshotArg,
		Example: `  sailtui snapshot label shop manual-20261129-1015 --label "known good"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("label") {
				return fmt.Errorf("snapshot label: give the new label with --label: %w", engine.ErrBadInput)
			}
			return printsSnapshot(a, func(cmd *cobra.Command, eng *engine.Engine, args []string) (engine.Snapshot, error) {
				return eng.RelabelSnapshot(cmd.Context(), args[0], args[1], label)
			})(cmd, args)
		},
	}
	relabel.Flags().StringVar(&label, "label", "", "the new label")

	rm := &cobra.Command{
		Use: "rm SLUG SNAPSHOT", Short: "Remove a snapshot (kept 30 days, then purged)", Args: cobra.ExactArgs(2),
		Long:    "Remove a snapshot (kept 30 days, then purged; snapshot undelete brings it back until then).\n\n" + snapshotArg,
		Example: "  sailtui snapshot rm shop \"before the upgrade\" --yes",
		RunE: printsSnapshot(a, func(cmd *cobra.Command, eng *engine.Engine, args []string) (engine.Snapshot, error) {
			snap, err := confirmSnapshot(cmd, a, eng, args, func(s engine.Snapshot) string {
				return fmt.Sprintf("remove snapshot %s (%q) of %s", s.ID, s.Label, args[0])
			})
			if err != nil {
				return engine.Snapshot{}, err
			}
			if err := eng.DeleteSnapshot(cmd.Context(), args[0], snap.ID); err != nil {
				return engine.Snapshot{}, err
			}
			return eng.Snapshot(cmd.Context(), args[0], snap.ID)
		}),
	}
	rm.Flags().BoolVarP(&a.cfg.Yes, "yes", "y", false, "do not ask for confirmation")

	undelete := &cobra.Command{
		Use: "undelete SLUG SNAPSHOT", Short: "Bring a deleted snapshot back into the timeline (within its 30 days)", Args: cobra.ExactArgs(2),
		Long: `Bring a deleted snapshot back into the timeline, as it was: within its 30 days of retention
(not in its last hour, which is the purge's). A manual one needs a free slot of the 5. Snapshots
that failed have no data and cannot come back. sailtui snapshot ls --all lists deleted ones.

` + snapshotArg + " Only deleted snapshots are looked at.",
		Example: `  sailtui snapshot undelete shop "before the upgrade"`,
		RunE: printsSnapshot(a, func(cmd *cobra.Command, eng *engine.Engine, args []string) (engine.Snapshot, error) {
			return eng.UndeleteSnapshot(cmd.Context(), args[0], args[1])
		}),
	}

	cmd.AddCommand(ls, create, restore, relabel, rm, undelete)
	return cmd
}

// snapshotArg is how every command that takes a snapshot reads it (engine.ResolveSnapshot).
const snapshotArg = `SNAPSHOT is a snapshot's ID, its label, or a prefix of its ID that only it has (as docker
takes ID prefixes); one that names several is refused with the candidates.`

func safetyRow(s engine.Snapshot) *snapshotRow {
	if s.ID == "" {
		return nil
	}
	r := snapRow(s)
	return &r
}
