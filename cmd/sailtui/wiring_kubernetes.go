package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/engine"
)

// kubeVars are the kubernetes mode's settings, in the config table after the others.
var kubeVars = []configVar{
	{"KUBECONFIG", "--context", "~/.kube/config, else in-cluster", "kubernetes mode: the cluster, loaded as kubectl does (--context picks a context)"},
	{"K8S_STORAGE_CLASS", "", "(cluster default)", "kubernetes mode: storage class of project PVCs"},
	{"K8S_PVC_SIZE", "", "5Gi", "kubernetes mode: size of a project's PVC"},
	{"K8S_PVC_ACCESS_MODE", "", "ReadWriteOnce", "kubernetes mode: access mode of project PVCs"},
	{"K8S_INGRESS_CLASS", "", "nginx", "kubernetes mode: ingress class of container Ingresses"},
	{"K8S_WILDCARD_TLS_SECRET", "", "", "kubernetes mode: TLS secret of container Ingresses (https when set)"},
	{"K8S_ENABLE_POD_AFFINITY", "", "true", "kubernetes mode: keep a project's pods on one node (they share one volume)"},
	{"K8S_SNAPSHOT_CLASS", "", "(default class)", "kubernetes mode: VolumeSnapshotClass of hibernation and timeline snapshots"},
	{"K8S_SNAPSHOT_READY_TIMEOUT_SECONDS", "", "300", "kubernetes mode: wait this long for readyToUse; on timeout nothing is deleted"},
	{"K8S_USE_S3_SNAPSHOTS", "", "false", "kubernetes mode: snapshots as archives in S3_BUCKET_NAME, streamed through the file-manager pod, instead of VolumeSnapshots"},
	{"K8S_NAMESPACE_PREFIX", "", "proj-", "kubernetes mode: project namespaces are <prefix><project-id>"},
	{"K8S_INGRESS_NAMESPACE", "", "ingress-nginx", "kubernetes mode: namespace of the ingress controller (allowed in by the NetworkPolicy)"},
	{"K8S_PLATFORM_NAMESPACE", "", "tesslate", "kubernetes mode: namespace of the platform (allowed in by the NetworkPolicy)"},
	{"K8S_SWEEPER_SERVICE_ACCOUNT", "", kubernetes.SweeperNamespace + "/" + kubernetes.SweeperServiceAccount, "kubernetes mode: namespace/name bound in each project namespace for the headless sweeps (\"-\": none)"},
	{"K8S_FILE_MANAGER_IMAGE", "", "DEVSERVER_IMAGE", "kubernetes mode: image of the file-manager pod"},
}

func init() { configVars = append(configVars, kubeVars...) }

// kubeContext is --context: the kubeconfig context to use.
var kubeContext string

// kubernetesConfig reads the kubernetes mode's settings from the environment.
func kubernetesConfig(cfg config) (kubernetes.Config, error) {
	kc := kubernetes.Config{
		Image:             orDefault(cfg.DevserverImage, "tesslate-devserver:latest"),
		FileManagerImage:  os.Getenv("K8S_FILE_MANAGER_IMAGE"),
		AppDomain:         orDefault(cfg.AppDomain, "localhost"),
		IngressClass:      os.Getenv("K8S_INGRESS_CLASS"),
		TLSSecret:         os.Getenv("K8S_WILDCARD_TLS_SECRET"),
		StorageClass:      os.Getenv("K8S_STORAGE_CLASS"),
		PVCSize:           os.Getenv("K8S_PVC_SIZE"),
		PVCAccessMode:     os.Getenv("K8S_PVC_ACCESS_MODE"),
		SnapshotClass:     os.Getenv("K8S_SNAPSHOT_CLASS"),
		NamespacePrefix:   os.Getenv("K8S_NAMESPACE_PREFIX"),
		IngressNamespace:  os.Getenv("K8S_INGRESS_NAMESPACE"),
		PlatformNamespace: os.Getenv("K8S_PLATFORM_NAMESPACE"),
		Sweeper:           orDefault(os.Getenv("K8S_SWEEPER_SERVICE_ACCOUNT"), kubernetes.SweeperNamespace+"/"+kubernetes.SweeperServiceAccount),
		PodAffinity:       true,
	}
	if kc.Sweeper == "-" {
		kc.Sweeper = ""
	}
	boolVar := func(name string, dst *bool) error {
		if v := os.Getenv(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s=%q: want true or false: %w", name, v, engine.ErrBadInput)
			}
			*dst = b
		}
		return nil
	}
	if err := boolVar("K8S_ENABLE_POD_AFFINITY", &kc.PodAffinity); err != nil {
		return kc, err
	}
	if _, err := kubeUseArchives(); err != nil {
		return kc, err
	}
	if v := os.Getenv("K8S_SNAPSHOT_READY_TIMEOUT_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return kc, fmt.Errorf("K8S_SNAPSHOT_READY_TIMEOUT_SECONDS=%q: want a positive number of seconds: %w", v, engine.ErrBadInput)
		}
		kc.SnapshotReadyTimeout = time.Duration(n) * time.Second
	}
	return kc, nil
}

// openKubernetes connects to the cluster as kubectl would (KUBECONFIG, ~/.kube/config,
// --context; in a pod with none of those, the in-cluster service account) and checks the API
// server answers, so a wrong cluster is reported before anything is touched.
func openKubernetes(ctx context.Context, cfg config, log *slog.Logger) (*kubernetes.Runtime, kubernetes.Config, error) {
	// client-go speaks through klog, which writes its own lines to stderr: they would break the
	// headless mode's JSON log and draw over the console. klog is process-wide; this process
	// has one cluster.
	klog.SetSlogLogger(log)
	kc, err := kubernetesConfig(cfg)
	if err != nil {
		return nil, kc, err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubeContext}
	rest, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, kc, fmt.Errorf("kubernetes: load cluster config (KUBECONFIG, --context, or in-cluster): %w", err)
	}
	rest.UserAgent = "sailtui/" + version
	kc.REST = rest
	rt, err := kubernetes.New(kc)
	if err != nil {
		return nil, kc, fmt.Errorf("kubernetes: %w", err)
	}
	if err := rt.Check(ctx); err != nil {
		return nil, kc, fmt.Errorf("kubernetes: %w; check KUBECONFIG / --context", err)
	}
	return rt, kc, nil
}

// kubeUseArchives is K8S_USE_S3_SNAPSHOTS: snapshots as archives through the file-manager pod.
// They must go to a bucket: a directory would be on whichever machine or pod ran the
// hibernation (an emptyDir in a CronJob pod), out of reach of the next wake.
func kubeUseArchives() (bool, error) {
	v := os.Getenv("K8S_USE_S3_SNAPSHOTS")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("K8S_USE_S3_SNAPSHOTS=%q: want true or false: %w", v, engine.ErrBadInput)
	}
	if b && os.Getenv("S3_BUCKET_NAME") == "" {
		return false, fmt.Errorf("K8S_USE_S3_SNAPSHOTS=true needs S3_BUCKET_NAME: archives kept in a local directory would be lost with the pod that made them: %w", engine.ErrBadInput)
	}
	return b, nil
}
