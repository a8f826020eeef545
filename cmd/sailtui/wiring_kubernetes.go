package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// kubernetesConfig is the runtime's configuration: the K8S_* settings read at start, and the
// images and domain shared with docker mode (with the kubernetes defaults).
func kubernetesConfig(cfg config) kubernetes.Config {
	kc := cfg.Kube
	kc.Image = orDefault(cfg.DevserverImage, "tesslate-devserver:latest")
	kc.AppDomain = orDefault(cfg.AppDomain, "localhost")
	return kc
}

// openKubernetes connects to the cluster as kubectl would (KUBECONFIG, ~/.kube/config,
// --context; in a pod with none of those, the in-cluster service account) and checks the API
// server answers, so a wrong cluster is reported before anything is touched.
//
// logs, when not nil, is the bucket that keeps container logs across stops and hibernation.
func openKubernetes(ctx context.Context, cfg config, log *slog.Logger, logs engine.ObjectStore) (*kubernetes.Runtime, error) {
	// client-go speaks through klog, which writes its own lines to stderr: they would break the
	// headless mode's JSON log and draw over the console. klog is process-wide; this process
	// has one cluster.
	klog.SetSlogLogger(log)
	kc := kubernetesConfig(cfg)
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.KubeContext}
	rest, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: load cluster config (KUBECONFIG, --context, or in-cluster): %w", err)
	}
	rest.UserAgent = "sailtui/" + version
	kc.REST = rest
	if logs != nil {
		// Beside the archives' prefix, never under it: no archive inventory sees a log.
		kc.Logs, kc.LogPrefix = logs, strings.Trim(cmp.Or(cfg.ObjectPrefix, archive.DefaultPrefix), "/")+"-logs/"
	}
	kc.LogMaxBytes, kc.Logger = int64(cfg.LogMaxMiB)<<20, log
	rt, err := kubernetes.New(kc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	if err := rt.Check(ctx); err != nil {
		return nil, fmt.Errorf("kubernetes: %w; check KUBECONFIG / --context", err)
	}
	return rt, nil
}
