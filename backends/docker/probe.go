package docker

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/sailtui/sailtui/engine"
)

var _ engine.PortProber = (*Runtime)(nil)

// ProbePort reports whether the container accepts connections on its port, through the port
// it is published on (its local URL). Docker's userland proxy accepts a connection on a
// published port whatever the container does, and closes it at once when nothing listens
// inside; so a connection counts only when it stays open a moment (or the server speaks first).
func (r *Runtime) ProbePort(ctx context.Context, p engine.Project, c engine.Container, st engine.ContainerStatus) (bool, error) {
	if st.State != engine.ContainerRunning || st.HostPort == 0 {
		return false, nil
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(r.cfg.PublishHost, strconv.Itoa(st.HostPort)))
	if err != nil {
		return false, nil
	}
	defer conn.Close()
	wait := 250 * time.Millisecond
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = time.Until(dl)
	}
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	var b [1]byte
	if _, err := conn.Read(b[:]); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return true, nil
	}
	return false, nil
}
