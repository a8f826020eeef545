// Command sailtui-csi is the real node's CSI driver (package csidriver): a hostpath-like driver
// serving the CSI Identity, Controller and Node services on a unix socket.
//
//	sailtui-csi --endpoint SOCKET --root DIR --node-id NODE [--name DRIVER] [--registry DIR]
//
// With --registry (the kubelet's <root-dir>/plugins_registry) it also registers itself with
// the kubelet there, as node-driver-registrar would, and unregisters when it stops.
// It needs root (bind mounts, and ownership kept through snapshots) and GNU tar.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sailtui/sailtui/backends/kubernetes/k8stest/csidriver"
)

var version = "dev"

func main() {
	endpoint := flag.String("endpoint", "", "unix socket to serve CSI on")
	root := flag.String("root", "", "directory of the volumes, snapshots and their records")
	nodeID := flag.String("node-id", "", "this node's name, as the kubelet registers it")
	name := flag.String("name", csidriver.DefaultName, "CSI driver name")
	registry := flag.String("registry", "", "the kubelet's plugin registry directory to register in (none: no registration)")
	flag.Parse()
	if *endpoint == "" || *root == "" || *nodeID == "" {
		fmt.Fprintln(os.Stderr, "usage: sailtui-csi --endpoint SOCKET --root DIR --node-id NODE [--name DRIVER] [--registry DIR]")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "sailtui-csi")
	if err := run(*endpoint, *registry, csidriver.Config{Name: *name, Version: version, NodeID: *nodeID, Root: *root, Log: log}); err != nil {
		log.Error("stopped", "err", err)
		os.Exit(1)
	}
}

func run(endpoint, registry string, cfg csidriver.Config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d, err := csidriver.New(cfg)
	if err != nil {
		return err
	}
	lis, err := csidriver.ListenUnix(endpoint)
	if err != nil {
		return err
	}
	defer os.Remove(endpoint)
	endpoint, err = filepath.Abs(endpoint)
	if err != nil {
		return err
	}
	errs := make(chan error, 2)
	go func() { errs <- d.Serve(ctx, lis) }()
	running := 1
	if registry != "" {
		// Registered only once the CSI socket answers: the kubelet dials it at once.
		sock := csidriver.RegistrationSocket(registry, cfg.Name)
		rlis, err := csidriver.ListenUnix(sock)
		if err != nil {
			stop()
			<-errs
			return err
		}
		// The socket's removal is the unregistration.
		defer os.Remove(sock)
		go func() { errs <- d.NewRegistrar(endpoint).Serve(ctx, rlis) }()
		running++
	}
	cfg.Log.Info("serving", "endpoint", endpoint, "registry", registry, "name", cfg.Name, "node", cfg.NodeID, "version", cfg.Version)
	var first error
	for ; running > 0; running-- {
		if err := <-errs; err != nil && first == nil {
			first = err
			stop() // one server failing stops the other
		}
	}
	return first
}
