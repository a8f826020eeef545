package archive_test

import (
	"testing"

	"github.com/sailtui/sailtui/backends/dirstore"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/volumestest"
)

// The Volumes contract for the Sandwich over a real object store (the directory store).
func TestVolumesContract(t *testing.T) {
	volumestest.Run(t, volumestest.Sandwich(func(t *testing.T) engine.ObjectStore {
		s, err := dirstore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}))
}
