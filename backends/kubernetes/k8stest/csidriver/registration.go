package csidriver

import (
	"context"
	"net"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The kubelet learns of a CSI driver through its plugin watcher: a socket appearing in
// <kubelet root-dir>/plugins_registry serving the plugin-registration API. Upstream that is
// node-driver-registrar's job, a sidecar not on the module proxy; the API is two calls, so
// the driver serves it itself.

// RegistrationSocket is the path of the registration socket for driver name in the kubelet's
// plugin registry directory (node-driver-registrar's name for it).
func RegistrationSocket(registryDir, name string) string {
	return filepath.Join(registryDir, name+"-reg.sock")
}

// Registrar serves the plugin-registration API for one CSI driver.
type Registrar struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	d              *Driver

	mu         sync.Mutex
	registered bool
	lastErr    string
	changed    chan struct{} // closed and replaced at each NotifyRegistrationStatus
}

// NewRegistrar answers the kubelet for d, whose CSI socket is at endpoint (a path the kubelet
// can dial).
func (d *Driver) NewRegistrar(endpoint string) *Registrar {
	return &Registrar{name: d.cfg.Name, endpoint: endpoint, d: d, changed: make(chan struct{})}
}

// GetInfo tells the kubelet the driver's name, CSI endpoint and the CSI versions it speaks.
func (r *Registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint,
		SupportedVersions: []string{"1.0.0"}}, nil
}

// NotifyRegistrationStatus is the kubelet's answer: registered, or why not.
func (r *Registrar) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.mu.Lock()
	r.registered, r.lastErr = st.GetPluginRegistered(), st.GetError()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	if st.GetPluginRegistered() {
		r.d.log.Info("registered with the kubelet", "name", r.name)
	} else {
		r.d.log.Error("the kubelet refused the registration", "name", r.name, "err", st.GetError())
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Status is the kubelet's last answer (registered, or its error), and a channel closed at
// the next one.
func (r *Registrar) Status() (registered bool, refusal string, next <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registered, r.lastErr, r.changed
}

// Serve answers the kubelet on lis (see RegistrationSocket) until ctx ends. The kubelet
// registers the driver when the socket appears and unregisters it when the socket goes, so
// the caller removes the socket after Serve returns.
func (r *Registrar) Serve(ctx context.Context, lis net.Listener) error {
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, r)
	return serveUntil(ctx, srv, lis)
}
