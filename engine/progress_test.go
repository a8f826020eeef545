package engine

import (
	"context"
	"testing"
)

// What Volumes report through the context reaches the operation's reporter as the
// operation's: a safety snapshot's archive phase belongs to the restore that takes it.
func TestVolumesProgressIsTheOperations(t *testing.T) {
	log := &pauseLog{}
	var got []Progress
	vols := pauseVolumes{log: log, create: func(ctx context.Context) error {
		if fn := ProgressFrom(ctx); fn != nil {
			fn(Progress{ProjectID: "other", Op: OpSnapshot, Phase: "archive", Done: 7})
		}
		return nil
	}}
	o, _ := pauseOp(plainRuntime{}, vols, OpRestore)
	ctx := WithProgress(t.Context(), func(p Progress) { got = append(got, p) })
	if _, err := o.createPointInTime(ctx, Snapshot{ID: "s1"}, func(Progress) {}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (Progress{ProjectID: "p1", Op: OpRestore, Phase: "archive", Done: 7}) {
		t.Errorf("reports %+v, want the archive phase as the restore's of p1", got)
	}
	// Without a reporter the Volumes find none and build no reports.
	vols.create = func(ctx context.Context) error {
		if ProgressFrom(ctx) != nil {
			t.Error("a reporter appeared from nowhere")
		}
		return nil
	}
	o, _ = pauseOp(plainRuntime{}, vols, OpRestore)
	if _, err := o.createPointInTime(t.Context(), Snapshot{ID: "s1"}, func(Progress) {}); err != nil {
		t.Fatal(err)
	}
}
