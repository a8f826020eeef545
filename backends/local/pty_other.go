//go:build !linux

package local

import (
	"os"

	"github.com/sailtui/sailtui/engine"
)

func openPTY() (master, tty *os.File, err error) { return nil, nil, errUnsupported }
func setPTYSize(*os.File, engine.TermSize) error { return errUnsupported }
