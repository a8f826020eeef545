package main

import (
	"testing"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/backends/postgres/pgtest"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// Fencing (issue 30) is the engine's, tested at every pause point in engine/ on the embedded
// default. Here: rounds over PostgreSQL (two processes on one database, two engines here), and
// in docker mode at the points where docker's steps differ (containers removed, the pause of a
// snapshot walk, a restore's swap).

// supersededParts wires a round over cfg: a holder and a taker, each an engine as a process of
// its own would open it.
func supersededParts(cfg config) enginetest.SupersededParts {
	return enginetest.SupersededParts{
		Holder: func(t *testing.T, hook func(engine.OpKind, string)) *engine.Engine {
			return openConfig(t, cfg, "holder", func(c *engine.Config) { c.StepHook = hook }).eng
		},
		Taker: func(t *testing.T, hook func(engine.OpKind, string)) (*engine.Engine, engine.Store) {
			p := openConfig(t, cfg, "taker", func(c *engine.Config) { c.OpTimeout, c.StepHook = enginetest.TakerOpTimeout, hook })
			return p.eng, p.store
		},
	}
}

// On PostgreSQL the fenced writes are the store's own SQL (row locks, the take-over's CTE):
// every round where the taker still holds the op, and one pause point per operation; the
// engine's test runs all of them on SQLite.
func TestPostgresSupersededHolder(t *testing.T) {
	t.Parallel()
	points := []enginetest.PausePoint{
		{Kind: engine.OpHibernate, Step: "snapshot-ready"},
		{Kind: engine.OpWake, Phase: "extract"},
		{Kind: engine.OpRestore, Step: "target"},
		{Kind: engine.OpSnapshot, Step: "snapshot-written"},
		{Kind: engine.OpDelete, Step: "torn-down"},
	}
	for _, pt := range enginetest.PausePoints {
		if pt.WhileTaken {
			points = append(points, pt)
		}
	}
	for _, pt := range points {
		t.Run(pt.String(), func(t *testing.T) {
			// A database of its own (on the shared server): a doctor --fix taker looks at
			// every project of its store, and another round's must not be in its way.
			cfg := testConfig(t.TempDir())
			cfg.DatabaseURL = pgtest.Start(t)
			enginetest.SupersededRound(t, supersededParts(cfg), pt)
		})
	}
}

func TestDockerSupersededHolder(t *testing.T) {
	t.Parallel()
	dcli := dockertest.Client(t)
	img := dockertest.Image(t, dcli)
	points := []enginetest.PausePoint{
		{Kind: engine.OpHibernate, Step: "snapshot-ready"},
		{Kind: engine.OpHibernate, Step: "snapshot-written", WhileTaken: true},
		{Kind: engine.OpWake, Phase: "extract"},
		{Kind: engine.OpRestore, Step: "stopped", WhileTaken: true},
		{Kind: engine.OpRestore, Phase: "extract"},
		{Kind: engine.OpSnapshot, Phase: "archive"},
		{Kind: engine.OpSnapshot, Step: "snapshot-written"},
		{Kind: engine.OpDelete, Step: "snapshot-ready"},
	}
	for _, pt := range points {
		t.Run(pt.String(), func(t *testing.T) {
			prefix := "sailtui-" + dockertest.Token(t, dcli)
			t.Cleanup(func() { dockertest.RemoveLabelled(t, dcli, "sailtui.project="+engine.Slugify(pt.Name())) })
			cfg := defaultConfig()
			cfg.StateDir = t.TempDir()
			cfg.Mode = "docker"
			cfg.DevserverImage = img
			cfg.DockerNetworkPrefix = prefix
			cfg.DefaultCommand = dockerDefaultCommand
			enginetest.SupersededRound(t, supersededParts(cfg), pt)
		})
	}
}
