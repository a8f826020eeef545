package engine_test

import (
	"testing"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/enginetest"
)

// A holder paused at any journaled step (or inside a volume's long call) and taken over never
// acts again (issue 30): every pause point, two processes over the embedded default.
func TestSupersededHolder(t *testing.T) {
	for _, pt := range enginetest.PausePoints {
		t.Run(pt.String(), func(t *testing.T) {
			state := t.TempDir()
			enginetest.SupersededRound(t, enginetest.SupersededParts{
				Holder: func(t *testing.T, hook func(engine.OpKind, string)) *engine.Engine {
					return openTest(t, state, "holder", func(c *engine.Config) { c.StepHook = hook }).eng
				},
				Taker: func(t *testing.T, hook func(engine.OpKind, string)) (*engine.Engine, engine.Store) {
					p := openTest(t, state, "taker", func(c *engine.Config) {
						c.OpTimeout, c.StepHook = enginetest.TakerOpTimeout, hook
					})
					return p.eng, p.store
				},
			}, pt)
		})
	}
}
