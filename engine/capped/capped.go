// Package capped is an output buffer with a size limit, for the output of commands a runtime
// runs on a developer's behalf.
package capped

import "bytes"

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
