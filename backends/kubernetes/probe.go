package kubernetes

import (
	"context"

	"github.com/sailtui/sailtui/engine"
)

var _ engine.PortProber = (*Runtime)(nil)

// ProbePort reports the pod's readiness: a container's pod has a TCP probe on its port, so
// the kubelet, which can reach the pod, has already tried the port, and ContainerStatus reads
// running only once the pod is ready (its Deployment available). A dial from here would need
// a route to the pod network, which sailtui outside the cluster does not have.
func (r *Runtime) ProbePort(ctx context.Context, p engine.Project, c engine.Container, st engine.ContainerStatus) (bool, error) {
	return st.State == engine.ContainerRunning, nil
}
