// Package kubernetes is the production runtime: every project is a namespace holding its PVC, an
// always-on file-manager Deployment, one dev Deployment, Service and Ingress per container, a
// NetworkPolicy that walls it off, and (for the headless sweeps) a RoleBinding. It talks to the
// API server through client-go only, so everything that needs no process in a pod (create,
// start, stop, hibernate, wake, snapshots, purge) works and is tested against a bare control
// plane; file operations, exec and logs go through the file-manager and dev pods.
//
// Hibernation uses CSI VolumeSnapshots (Snapshots, an engine.Volumes); see snapshots.go.
package kubernetes

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/sailtui/sailtui/backends/kubernetes/kubeclient"
	"github.com/sailtui/sailtui/engine"
)

// Labels every object carries; the platform's other parts select on the tesslate.io keys.
const (
	LabelManagedBy    = "app.kubernetes.io/managed-by"
	ManagedBy         = "sailtui"
	LabelProjectID    = "tesslate.io/project-id"
	LabelUserID       = "tesslate.io/user-id"
	LabelComponent    = "tesslate.io/component"
	LabelContainerID  = "tesslate.io/container-id"
	LabelContainerDir = "tesslate.io/container-directory"
	LabelSnapshotID   = "tesslate.io/snapshot-id"
)

// Components, the values of LabelComponent.
const (
	ComponentProject     = "project"
	ComponentStorage     = "storage"
	ComponentFileManager = "file-manager"
	ComponentDev         = "dev"
	ComponentSnapshot    = "snapshot"
	ComponentTLS         = "tls"
)

// Fixed object names inside a project namespace.
const (
	PVCName         = "project-storage"
	FileManagerName = "file-manager"
	NetworkPolicy   = "project-isolation"
	// MountPath is where the project's storage is mounted in every pod, unless
	// Config.MountPath says otherwise.
	MountPath = "/app"
	// fieldManager owns the fields sailtui applies (server-side apply).
	fieldManager = "sailtui"
)

// Config configures the runtime. Zero values get the defaults of the reference platform.
type Config struct {
	// REST is the API server connection (kubeconfig or in-cluster); required.
	REST *rest.Config

	// Image runs the dev containers (DEVSERVER_IMAGE); FileManagerImage the file manager
	// (default Image). Both need a POSIX sh, cat, find, stat, readlink, mkdir, rm and timeout.
	Image            string
	FileManagerImage string
	// MountPath is where the project's storage is mounted in every pod (default MountPath).
	// Its parent is outside the project: a test that puts a file there for the user to reach
	// needs it writable by the pods' user, which / of an image is not.
	MountPath string
	// ImagePullPolicy (K8S_IMAGE_PULL_POLICY, default IfNotPresent) and ImagePullSecret
	// (K8S_IMAGE_PULL_SECRET: a Secret in every project namespace, see PullSecretFrom)
	// apply to every pod of a project.
	ImagePullPolicy string
	ImagePullSecret string
	// PullSecretFrom (K8S_COPY_PULL_SECRET_FROM, opt-in) is the namespace ImagePullSecret is
	// copied from into every project namespace (pullsecret.go).
	PullSecretFrom string
	// IngressAnnotations (K8S_INGRESS_ANNOTATIONS) are added to every Ingress, over the
	// defaults that keep dev-server websockets open (see ingressAnnotations).
	IngressAnnotations map[string]string
	// AllowRootServices (K8S_ALLOW_ROOT_SERVICES) lets service containers of images known to
	// start as root (postgres, mysql, ...) run as root; without it they are refused. See
	// services.go.
	AllowRootServices bool

	AppDomain    string // default "localhost"
	IngressClass string // K8S_INGRESS_CLASS, default "nginx"
	TLSSecret    string // K8S_WILDCARD_TLS_SECRET: Ingress TLS when set
	// TLSSecretFrom (K8S_COPY_TLS_SECRET_FROM, opt-in) is the namespace TLSSecret is copied
	// from into every project namespace; "" copies nothing (the controller's default
	// certificate, e.g. ingress-nginx --default-ssl-certificate, then has to serve).
	TLSSecretFrom string
	StorageClass  string // K8S_STORAGE_CLASS: "" uses the cluster default
	PVCSize       string // K8S_PVC_SIZE, default "5Gi"
	PVCAccessMode string // K8S_PVC_ACCESS_MODE, default "ReadWriteOnce"
	// PodAffinity (K8S_ENABLE_POD_AFFINITY) keeps a project's pods on one node, which a
	// ReadWriteOnce volume shared by them requires.
	PodAffinity bool
	// NamespacePrefix precedes the project id in its namespace name (default "proj-").
	NamespacePrefix string
	// IngressNamespace and PlatformNamespace may reach project pods (NetworkPolicy).
	IngressNamespace  string // default "ingress-nginx"
	PlatformNamespace string // default "tesslate"

	// SnapshotClass is the VolumeSnapshotClass (K8S_SNAPSHOT_CLASS; "" uses the default class).
	SnapshotClass string
	// SnapshotReadyTimeout bounds the wait for readyToUse (default 300 s).
	SnapshotReadyTimeout time.Duration
	// DeleteTimeout bounds waits for a namespace or PVC to go (default 5 min).
	DeleteTimeout time.Duration

	// Sweeper, "namespace/name" of the service account the headless sweeps run as, gets the
	// SweeperProjectRole in every project namespace. "" creates no RoleBinding.
	Sweeper string

	// Logs, when set, keeps container logs across stops and hibernation (logs.go): the bucket
	// of S3_BUCKET_NAME, under LogPrefix (default "logs/"), each container's capped at
	// LogMaxBytes compressed (SAILTUI_LOG_MAX_MIB; default logfile.DefaultMax). Nil: a log
	// is its pod's and goes with it.
	Logs        engine.ObjectStore
	LogPrefix   string
	LogMaxBytes int64
	// Logger gets what the runtime cannot report as an operation's error (a log not kept).
	Logger *slog.Logger
}

func (c *Config) defaults() error {
	if c.REST == nil {
		return errors.New("kubernetes runtime: no API server configuration")
	}
	c.Image = cmp.Or(c.Image, "tesslate-devserver:latest")
	c.FileManagerImage = cmp.Or(c.FileManagerImage, c.Image)
	c.MountPath = cmp.Or(c.MountPath, MountPath)
	if !strings.HasPrefix(c.MountPath, "/") || path.Clean(c.MountPath) != c.MountPath || c.MountPath == "/" {
		return fmt.Errorf("kubernetes runtime: mount path %q: want an absolute, clean path below /", c.MountPath)
	}
	c.ImagePullPolicy = cmp.Or(c.ImagePullPolicy, "IfNotPresent")
	if err := CheckImagePullPolicy(c.ImagePullPolicy); err != nil {
		return fmt.Errorf("K8S_IMAGE_PULL_POLICY=%q: %w", c.ImagePullPolicy, err)
	}
	if c.ImagePullSecret != "" {
		if err := CheckImagePullSecret(c.ImagePullSecret); err != nil {
			return fmt.Errorf("K8S_IMAGE_PULL_SECRET=%q: %w", c.ImagePullSecret, err)
		}
	}
	if err := checkAnnotations(c.IngressAnnotations); err != nil {
		return fmt.Errorf("K8S_INGRESS_ANNOTATIONS: %w", err)
	}
	c.AppDomain = cmp.Or(c.AppDomain, "localhost")
	c.IngressClass = cmp.Or(c.IngressClass, "nginx")
	c.PVCSize = cmp.Or(c.PVCSize, "5Gi")
	if err := CheckPVCSize(c.PVCSize); err != nil {
		return fmt.Errorf("K8S_PVC_SIZE=%q: %w", c.PVCSize, err)
	}
	c.PVCAccessMode = cmp.Or(c.PVCAccessMode, "ReadWriteOnce")
	if err := CheckPVCAccessMode(c.PVCAccessMode); err != nil {
		return fmt.Errorf("K8S_PVC_ACCESS_MODE=%q: %w", c.PVCAccessMode, err)
	}
	c.NamespacePrefix = cmp.Or(c.NamespacePrefix, "proj-")
	c.IngressNamespace = cmp.Or(c.IngressNamespace, "ingress-nginx")
	c.PlatformNamespace = cmp.Or(c.PlatformNamespace, "tesslate")
	if c.SnapshotReadyTimeout <= 0 {
		c.SnapshotReadyTimeout = 300 * time.Second
	}
	if c.DeleteTimeout <= 0 {
		c.DeleteTimeout = 5 * time.Minute
	}
	if c.LogPrefix == "" {
		c.LogPrefix = "logs/"
	}
	if !strings.HasSuffix(c.LogPrefix, "/") || strings.HasPrefix(c.LogPrefix, "/") {
		return fmt.Errorf("kubernetes runtime: log prefix %q: want a key prefix ending in /", c.LogPrefix)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Sweeper != "" {
		if err := CheckSweeper(c.Sweeper); err != nil {
			return fmt.Errorf("sweeper service account %q: %w", c.Sweeper, err)
		}
	}
	return nil
}

// The checks of the settings a Config takes as text, exported so that a command line can
// refuse a bad value when it reads its configuration, before it connects to anything. Their
// errors say what is wanted; the caller names the setting.

// CheckPVCSize checks a PVC size (K8S_PVC_SIZE).
func CheckPVCSize(s string) error {
	if _, err := resource.ParseQuantity(s); err != nil {
		return fmt.Errorf("%w (want a quantity such as 5Gi)", err)
	}
	return nil
}

// CheckPVCAccessMode checks a PVC access mode (K8S_PVC_ACCESS_MODE).
func CheckPVCAccessMode(s string) error {
	switch s {
	case "ReadWriteOnce", "ReadWriteMany", "ReadWriteOncePod":
		return nil
	}
	return errors.New("want ReadWriteOnce, ReadWriteMany or ReadWriteOncePod")
}

// CheckSweeper checks the sweeper's service account, "namespace/name".
func CheckSweeper(s string) error {
	if ns, name, ok := strings.Cut(s, "/"); !ok || ns == "" || name == "" {
		return errors.New("want namespace/name")
	}
	return nil
}

// Runtime is the kubernetes engine.Runtime.
type Runtime struct {
	cfg          Config
	kube         *kubeclient.Clientset
	exec         executor
	ingressClass ingressClassCheck
}

var (
	_ engine.Runtime       = (*Runtime)(nil)
	_ engine.RemoteFiles   = (*Runtime)(nil)
	_ engine.GitCloner     = (*Runtime)(nil)
	_ engine.ServiceRunner = (*Runtime)(nil)
	_ engine.LogKeeper     = (*Runtime)(nil)
)

// New connects to the API server of cfg.REST. It makes no request: a wrong address shows at
// the first call (use Check to fail early).
func New(cfg Config) (*Runtime, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	kube, err := kubeclient.New(cfg.REST)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Runtime{cfg: cfg, kube: kube, exec: &podExecutor{config: cfg.REST, client: kube}}, nil
}

// Mode implements engine.Runtime.
func (r *Runtime) Mode() string { return "kubernetes" }

// FilesNeedProcess implements engine.RemoteFiles: every file operation is an exec into the
// file-manager pod.
func (r *Runtime) FilesNeedProcess() bool { return true }

// FilesReady implements engine.FilesReadier: a file-manager pod is running now (one look, no
// wait).
func (r *Runtime) FilesReady(ctx context.Context, p engine.Project) bool {
	pod, _, err := r.findRunningPod(ctx, r.Namespace(p), map[string]string{LabelProjectID: labelValue(p.ID), LabelComponent: ComponentFileManager}, "file manager")
	return err == nil && pod != ""
}

// Check asks the API server for its version, so a wrong address or credential is reported
// before any work starts.
func (r *Runtime) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := r.kube.Raw().Get().AbsPath("/version").DoRaw(ctx); err != nil {
		return fmt.Errorf("kubernetes API server %s: %w", r.cfg.REST.Host, err)
	}
	return nil
}

// Namespace is the project's namespace: the prefix and the project id, cut to a DNS label.
func (r *Runtime) Namespace(p engine.Project) string {
	return dnsLabel(r.cfg.NamespacePrefix + strings.ToLower(p.ID))
}

// devName names a container's Deployment, Service and Ingress.
func devName(c engine.Container) string { return dnsLabel("dev-" + strings.ToLower(c.Name)) }

// Host is the container's public host name: <slug>-<dir>.<domain>, the first label cut to 63
// characters with a hash of the whole kept, so two long names never share a host.
func (r *Runtime) Host(p engine.Project, c engine.Container) string {
	dir := c.Directory
	if dir == "" || dir == "." {
		dir = c.Name
	}
	return dnsLabel(p.Slug+"-"+strings.ReplaceAll(dir, "/", "-")) + "." + r.cfg.AppDomain
}

// dnsLabel makes s a valid DNS-1123 label: lower case, [a-z0-9-], at most 63 characters,
// starting and ending with an alphanumeric. A label that had to be changed or cut gets a hash
// of the original at its end, so distinct inputs stay distinct.
func dnsLabel(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == s && len(out) <= validation.DNS1123LabelMaxLength && out != "" {
		return out
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:8]
	if len(out) > validation.DNS1123LabelMaxLength-9 {
		out = strings.TrimRight(out[:validation.DNS1123LabelMaxLength-9], "-")
	}
	if out == "" {
		return "x-" + h
	}
	return out + "-" + h
}

// labelValue makes s a valid label value (at most 63 of [A-Za-z0-9._-], alphanumeric at both
// ends), with a hash when it had to change, as dnsLabel does.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(s))
	h := hex.EncodeToString(sum[:])[:8]
	out := strings.Trim(b.String(), "-._")
	if len(out) > 63-9 {
		out = strings.TrimRight(out[:63-9], "-._")
	}
	if out == "" {
		return h
	}
	return out + "-" + h
}

// projectLabels are the labels of every object of p.
func projectLabels(p engine.Project, component string) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelProjectID: labelValue(p.ID),
		LabelUserID:    labelValue(p.Owner),
		LabelComponent: component,
	}
}

// containerLabels add the container's keys to projectLabels.
func containerLabels(p engine.Project, c engine.Container) map[string]string {
	l := projectLabels(p, ComponentDev)
	l[LabelContainerID] = labelValue(c.Name)
	l[LabelContainerDir] = labelValue(c.Directory)
	return l
}
