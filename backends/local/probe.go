package local

import (
	"context"
	"net"
	"strconv"

	"github.com/sailtui/sailtui/engine"
)

var _ engine.PortProber = (*Runtime)(nil)

// ProbePort reports whether the container's process accepts connections on the port it was
// given (PORT), where its URL points: local processes share this machine's network.
func (r *Runtime) ProbePort(ctx context.Context, p engine.Project, c engine.Container, st engine.ContainerStatus) (bool, error) {
	if st.State != engine.ContainerRunning || st.HostPort == 0 {
		return false, nil
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(r.cfg.Host, strconv.Itoa(st.HostPort)))
	if err != nil {
		return false, nil
	}
	_ = conn.Close()
	return true, nil
}
