package csidriver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// TestRegistration plays the kubelet's plugin watcher: it finds the registration socket in
// the plugin registry, asks for the plugin's info, dials the CSI endpoint it names as the
// kubelet does, and answers with the registration status, which the driver records.
func TestRegistration(t *testing.T) {
	s := serve(t, "")
	registry := filepath.Join(s.dir, "plugins_registry")
	reg := s.drv.NewRegistrar(s.sock)
	lis, err := ListenUnix(RegistrationSocket(registry, DefaultName))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("registrar: %v", err)
		}
	})

	dial := func(path string) *grpc.ClientConn {
		conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	call, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	client := registerapi.NewRegistrationClient(dial(filepath.Join(registry, DefaultName+"-reg.sock")))
	info, err := client.GetInfo(call, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetType() != registerapi.CSIPlugin || info.GetName() != DefaultName || info.GetEndpoint() != s.sock ||
		len(info.GetSupportedVersions()) == 0 {
		t.Fatalf("GetInfo: %+v; want a CSI plugin %s at %s with its versions", info, DefaultName, s.sock)
	}
	// The kubelet checks the endpoint it was given answers as the named driver.
	pi, err := csi.NewIdentityClient(dial(info.GetEndpoint())).GetPluginInfo(call, &csi.GetPluginInfoRequest{})
	if err != nil || pi.GetName() != DefaultName {
		t.Fatalf("GetPluginInfo at the registered endpoint: %v, %v", pi, err)
	}
	node, err := csi.NewNodeClient(dial(info.GetEndpoint())).NodeGetInfo(call, &csi.NodeGetInfoRequest{})
	if err != nil || node.GetNodeId() != "node-1" || node.GetAccessibleTopology().GetSegments()[TopologyKey] != "node-1" {
		t.Fatalf("NodeGetInfo: %v, %v; want node-1 with its topology segment", node, err)
	}

	_, _, next := reg.Status()
	if _, err := client.NotifyRegistrationStatus(call, &registerapi.RegistrationStatus{PluginRegistered: false, Error: "no"}); err != nil {
		t.Fatal(err)
	}
	<-next
	if ok, why, _ := reg.Status(); ok || why != "no" {
		t.Errorf("after a refusal: registered %v, %q", ok, why)
	}
	if _, err := client.NotifyRegistrationStatus(call, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	if ok, why, _ := reg.Status(); !ok || why != "" {
		t.Errorf("after the registration: registered %v, %q", ok, why)
	}
}

func TestObject(t *testing.T) {
	o := Object(DefaultName)
	if o.Name != DefaultName || *o.Spec.AttachRequired || string(*o.Spec.FSGroupPolicy) != "File" {
		t.Errorf("CSIDriver %+v: want %s, attachRequired false, fsGroupPolicy File", o.Spec, DefaultName)
	}
}
