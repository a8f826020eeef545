// Command sailtui-csi is the real node's CSI driver (package csidriver): a hostpath-like driver
// serving the CSI Identity, Controller and Node services on a unix socket.
//
//	sailtui-csi --endpoint SOCKET --root DIR --node-id NODE [--name DRIVER]
//
// It needs root (bind mounts, and ownership kept through snapshots) and GNU tar.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/sailtui/sailtui/backends/kubernetes/k8stest/csidriver"
)

var version = "dev"

func main() {
	endpoint := flag.String("endpoint", "", "unix socket to serve CSI on")
	root := flag.String("root", "", "directory of the volumes, snapshots and their records")
	nodeID := flag.String("node-id", "", "this node's name, as the kubelet registers it")
	name := flag.String("name", csidriver.DefaultName, "CSI driver name")
	flag.Parse()
	if *endpoint == "" || *root == "" || *nodeID == "" {
		fmt.Fprintln(os.Stderr, "usage: sailtui-csi --endpoint SOCKET --root DIR --node-id NODE [--name DRIVER]")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "sailtui-csi")
	if err := run(*endpoint, csidriver.Config{Name: *name, Version: version, NodeID: *nodeID, Root: *root, Log: log}); err != nil {
		log.Error("stopped", "err", err)
		os.Exit(1)
	}
}

func run(endpoint string, cfg csidriver.Config) error {
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
	cfg.Log.Info("serving", "endpoint", endpoint, "name", cfg.Name, "node", cfg.NodeID, "version", cfg.Version)
	return d.Serve(ctx, lis)
}
