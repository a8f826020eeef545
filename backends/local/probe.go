package local

import (
	"context"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/portprobe"
)

var _ engine.PortProber = (*Runtime)(nil)

// ProbePort reports whether the container's process accepts connections on the port it was
// given (PORT), where its URL points: local processes share this machine's network.
func (r *Runtime) ProbePort(ctx context.Context, p engine.Project, c engine.Container, st engine.ContainerStatus) (bool, error) {
	return st.State == engine.ContainerRunning && portprobe.Answers(ctx, r.cfg.Host, st.HostPort, 0), nil
}
