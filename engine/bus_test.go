package engine_test

import (
	"testing"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/notifiertest"
)

// The in-process Bus keeps the Notifier contract.
func TestBusContract(t *testing.T) {
	notifiertest.Run(t, func(*testing.T) (engine.Notifier, engine.Notifier) {
		b := engine.NewBus()
		return b, b
	})
}
