// Package portprobe tells whether something accepts TCP connections at an address: what the
// runtimes that reach a container's port from this machine (local, docker) answer the engine's
// PortProber with.
package portprobe

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"time"
)

// Answers reports whether host:port accepts a connection within ctx. With hold > 0 the
// connection counts only when it stays open that long or the server speaks first: a proxy in
// front of the port (Docker's userland proxy) accepts every connection and closes it at once
// when nothing listens behind it.
func Answers(ctx context.Context, host string, port int, hold time.Duration) bool {
	if port <= 0 {
		return false
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	defer conn.Close()
	if hold <= 0 {
		return true
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < hold {
		hold = time.Until(dl)
	}
	_ = conn.SetReadDeadline(time.Now().Add(hold))
	var b [1]byte
	_, err = conn.Read(b[:])
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}
