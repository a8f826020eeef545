package docker

import (
	"context"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/portprobe"
)

var _ engine.PortProber = (*Runtime)(nil)

// proxyHold is how long a connection to a published port must stay open to count: Docker's
// userland proxy accepts one whatever the container does, and closes it at once when nothing
// listens inside.
const proxyHold = 250 * time.Millisecond

// ProbePort reports whether the container accepts connections on its port, through the port
// it is published on (its local URL).
func (r *Runtime) ProbePort(ctx context.Context, p engine.Project, c engine.Container, st engine.ContainerStatus) (bool, error) {
	return st.State == engine.ContainerRunning && portprobe.Answers(ctx, r.cfg.PublishHost, st.HostPort, proxyHold), nil
}
