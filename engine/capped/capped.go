// Package capped is an output buffer with a size limit, for the output of commands a runtime
// runs on a developer's behalf.
package capped

import (
	"bytes"

	"github.com/sailtui/sailtui/engine"
)

// Buffer keeps the first Max bytes written to it and drops the rest, so a chatty command is
// never blocked on a full pipe and never fills memory. Writes never fail.
type Buffer struct {
	Max int
	// Truncated is set once a write did not fit.
	Truncated bool
	buf       bytes.Buffer
}

func (c *Buffer) Write(p []byte) (int, error) {
	room := c.Max - c.buf.Len()
	if len(p) > room {
		c.Truncated = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// Bytes is what was kept.
func (c *Buffer) Bytes() []byte { return c.buf.Bytes() }

// String is what was kept, as a string.
func (c *Buffer) String() string { return c.buf.String() }

// DefaultMax is the cap of each stream when a request names none.
const DefaultMax = 1 << 20

// Output is a command's stdout and stderr, each capped; runtimes hand the two buffers to the
// process and build the engine's result from them.
type Output struct {
	Stdout, Stderr *Buffer
}

// NewOutput caps each stream at max bytes (DefaultMax when max <= 0).
func NewOutput(max int) Output {
	if max <= 0 {
		max = DefaultMax
	}
	return Output{Stdout: &Buffer{Max: max}, Stderr: &Buffer{Max: max}}
}

// Result is what the command left, with its exit code.
func (o Output) Result(code int, timedOut bool) engine.ExecResult {
	return engine.ExecResult{
		Stdout:    o.Stdout.Bytes(),
		Stderr:    o.Stderr.Bytes(),
		ExitCode:  code,
		TimedOut:  timedOut,
		Truncated: o.Stdout.Truncated || o.Stderr.Truncated,
	}
}
