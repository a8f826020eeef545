package s3store

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sailtui/sailtui/backends/s3/s3test"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/volumestest"
)

var volumesSeq atomic.Int64

// The Volumes contract for archive.Sandwich over S3 (versitygw): multipart uploads that fail
// or are cancelled in the middle leave no object. One bucket, a prefix per subtest.
func TestSandwichVolumesContract(t *testing.T) {
	srv := s3test.Start(t)
	volumestest.Run(t, volumestest.Sandwich(func(t *testing.T) engine.ObjectStore {
		return open(t, srv, fmt.Sprintf("volumes-%d", volumesSeq.Add(1)))
	}))
}
