package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sailtui/sailtui/backends/docker"
	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/postgres"
	"github.com/sailtui/sailtui/engine"
)

// setting is one row of the settings table, which drives reading the environment, the flags
// that set the same things, and `sailtui config` (the README's config table is this list).
type setting struct {
	env     string
	flag    *flagSpec
	def     string // the default as `sailtui config` shows it
	meaning string
	// parse applies a non-empty environment value, or says what it wants instead ("want ...");
	// fromEnv names the variable. nil: the part that uses the variable reads it itself (the S3
	// client, client-go), and the table only shows it.
	parse func(c *config, v string) error
	// value is what `sailtui config` shows now; nil shows the environment's value as given.
	value func(c *config) string
}

// flagSpec is a setting's flag.
type flagSpec struct {
	name  string
	usage string
	// target is where the flag writes: a *string, *bool or *time.Duration field of the config.
	target func(c *config) any
	// root: a flag of the console (the root command) only; else every command has it.
	root bool
	// sweep: the sweep commands have it as a per-sweep override of their own (sweepFlags);
	// the table only shows it.
	sweep bool
}

// shown is the flag as the FLAG column shows it.
func (f *flagSpec) shown() string {
	switch {
	case f == nil:
		return ""
	case f.sweep:
		return "--" + f.name + " (sweep)"
	}
	return "--" + f.name
}

// sweepFlag is a sweep command's flag shown beside the setting it overrides.
func sweepFlag(name string) *flagSpec { return &flagSpec{name: name, sweep: true} }

// The parsers of the table: each reads one kind of value into one field of the config.

// labelList reads key=value,key=value (Docker labels): keys non-empty, without spaces, and
// not sailtui's or compose's own, which sailtui sets and relies on.
func labelList(v string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		switch {
		case !ok || k == "" || strings.ContainsAny(k, " \t"):
			return nil, fmt.Errorf("want key=value,key=value; %q is not key=value", kv)
		case strings.HasPrefix(k, "sailtui.") || strings.HasPrefix(k, "com.docker.compose."):
			return nil, fmt.Errorf("label %q is sailtui's own (sailtui.*, com.docker.compose.*); choose another key", k)
		}
		m[k] = val
	}
	return m, nil
}

func formatLabels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + m[k]
	}
	return strings.Join(out, ",")
}

// field stores what parse makes of the value in the field get points at.
func field[T any](get func(*config) *T, parse func(string) (T, error)) func(*config, string) error {
	return func(c *config, v string) error {
		x, err := parse(v)
		if err != nil {
			return err
		}
		*get(c) = x
		return nil
	}
}

func asIs(v string) (string, error) { return v, nil }

func boolean(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errors.New("want true or false")
	}
	return b, nil
}

// intIn is a whole number from lo to hi.
func intIn(lo, hi int) func(string) (int, error) {
	return func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("want a number from %d to %d", lo, hi)
		}
		return n, nil
	}
}

// count is a whole number, at least lo, of unit.
func count(unit time.Duration, lo int, want string) func(string) (time.Duration, error) {
	return func(v string) (time.Duration, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo {
			return 0, errors.New(want)
		}
		return time.Duration(n) * unit, nil
	}
}

// positive is a positive Go duration; example is one the error offers.
func positive(example string) func(string) (time.Duration, error) {
	return func(v string) (time.Duration, error) {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("want a positive duration such as %s", example)
		}
		return d, nil
	}
}

// checked is the value as given, once check accepts it.
func checked(check func(string) error) func(string) (string, error) {
	return func(v string) (string, error) { return v, check(v) }
}

func minutes(d time.Duration) string { return strconv.Itoa(int(d.Minutes())) }

// settings is the table, in the order `sailtui config` shows it.
var settings = []setting{
	{env: "SAILTUI_STATE_DIR", def: "$XDG_DATA_HOME/sailtui", meaning: "where the embedded store, project directories, logs and archives live",
		flag:  &flagSpec{name: "state-dir", usage: "state directory (env SAILTUI_STATE_DIR)", target: func(c *config) any { return &c.StateDir }},
		parse: field(func(c *config) *string { return &c.StateDir }, asIs), value: func(c *config) string { return c.StateDir }},
	{env: "DEPLOYMENT_MODE", def: "local", meaning: "runtime: local, docker or kubernetes",
		flag:  &flagSpec{name: "mode", usage: "deployment mode: local, docker or kubernetes (env DEPLOYMENT_MODE)", target: func(c *config) any { return &c.Mode }},
		parse: field(func(c *config) *string { return &c.Mode }, asIs), value: func(c *config) string { return c.Mode }},
	{env: "K8S_HIBERNATION_IDLE_MINUTES", flag: sweepFlag("idle"), def: "30", meaning: "minutes without activity before the sweep hibernates a project",
		parse: field(func(c *config) *time.Duration { return &c.IdleTimeout }, count(time.Minute, 1, "want a positive number of minutes")),
		value: func(c *config) string { return minutes(c.IdleTimeout) }},
	{env: "SAILTUI_STOP_IDLE_MINUTES", flag: sweepFlag("stop-idle"), def: "0 (off)", meaning: "first idle tier: stop a project's containers after this many idle minutes, keep its files; hibernate after the idle timeout",
		parse: field(func(c *config) *time.Duration { return &c.StopIdleTimeout }, count(time.Minute, 0, "want a number of minutes (0 turns the tier off)")),
		value: func(c *config) string { return minutes(c.StopIdleTimeout) }},
	{env: "SAILTUI_IDLE_WARNING_MINUTES", def: "5", meaning: "the sweep sends a project an idle_warning event this many minutes before it hibernates it, and never hibernates one warned later than that (0: no warning)",
		parse: field(func(c *config) *time.Duration { return &c.IdleWarning }, count(time.Minute, 0, "want a number of minutes (0 turns the warning off)")),
		value: func(c *config) string { return minutes(c.IdleWarning) }},
	{env: "SAILTUI_ROUTER_METRICS_URL", def: "", meaning: "the router's Prometheus endpoint (Traefik or ingress-nginx): the hibernation sweep counts requests through a project's URL as its activity, and hibernates nothing while it cannot read them",
		parse: field(func(c *config) *string { return &c.RouterMetricsURL }, asIs), value: func(c *config) string { return c.RouterMetricsURL }},
	{env: "SAILTUI_WEBHOOK_URL", def: "", meaning: "POST each idle warning and status change to this URL as JSON, signed (X-Sailtui-Signature-256); retried with backoff, never holding up a sweep",
		parse: field(func(c *config) *string { return &c.WebhookURL }, asIs), value: func(c *config) string { return c.WebhookURL }},
	{env: "SAILTUI_WEBHOOK_SECRET", def: "", meaning: "the HMAC-SHA256 key of SAILTUI_WEBHOOK_URL's signatures (needed with it)",
		parse: field(func(c *config) *string { return &c.WebhookSecret }, asIs), value: func(c *config) string {
			if c.WebhookSecret == "" {
				return ""
			}
			return "(set)"
		}},
	{env: "SAILTUI_MAX_KEEP_ALIVE", def: engine.DefaultMaxKeepAlive.String(), meaning: "the longest project keep-alive --for accepts",
		parse: field(func(c *config) *time.Duration { return &c.MaxKeepAlive }, positive("12h")), value: func(c *config) string { return c.MaxKeepAlive.String() }},
	{env: "SAILTUI_OP_TIMEOUT", def: "10m", meaning: "an operation silent this long is taken over (a holder on this host known dead at once)",
		parse: field(func(c *config) *time.Duration { return &c.OpTimeout }, positive("10m")), value: func(c *config) string { return c.OpTimeout.String() }},
	{env: "SAILTUI_USE_WAIT", def: "30s", meaning: "how long hibernate, wake, restore, snapshot and delete wait for file operations and execs in progress (asked to stop after a third of it) before refusing",
		parse: field(func(c *config) *time.Duration { return &c.UseWait }, positive("30s")), value: func(c *config) string { return c.UseWait.String() }},
	{env: "SAILTUI_START_TIMEOUT", def: engine.DefaultStartTimeout.String(), meaning: "how long a start waits for each container to run and accept connections on its port (a first npm install included); one that exits or does not listen by then fails the start",
		flag:  &flagSpec{name: "start-timeout", usage: "how long a start waits for each container to come up (env SAILTUI_START_TIMEOUT)", target: func(c *config) any { return &c.StartTimeout }},
		parse: field(func(c *config) *time.Duration { return &c.StartTimeout }, positive("10m")), value: func(c *config) string { return c.StartTimeout.String() }},
	{env: "SAILTUI_SWEEP_CONCURRENCY", flag: sweepFlag("concurrency"), def: "16", meaning: "projects hibernated at once by one sweep",
		parse: field(func(c *config) *int { return &c.SweepConcurrency }, intIn(1, 1024)), value: func(c *config) string { return strconv.Itoa(c.SweepConcurrency) }},
	{env: "SAILTUI_LOG_MAX_MIB", def: "8", meaning: "local and docker: the most one container's kept log takes on disk, in MiB (the current file and the one rotated before it)",
		parse: field(func(c *config) *int { return &c.LogMaxMiB }, intIn(1, 4096)), value: func(c *config) string { return strconv.Itoa(c.LogMaxMiB) }},
	{env: "SAILTUI_READONLY", def: "false", meaning: "refuse every action that changes something",
		flag:  &flagSpec{name: "readonly", usage: "refuse every action that changes something (env SAILTUI_READONLY)", target: func(c *config) any { return &c.ReadOnly }},
		parse: field(func(c *config) *bool { return &c.ReadOnly }, boolean), value: func(c *config) string { return strconv.FormatBool(c.ReadOnly) }},
	{env: "SAILTUI_SKIN", def: "dark", meaning: "console colours: dark or light (NO_COLOR turns colour off)",
		flag: &flagSpec{name: "skin", usage: "console colours: dark or light (env SAILTUI_SKIN; NO_COLOR disables colour)", target: func(c *config) any { return &c.Skin }, root: true},
		// The skin is checked by the console, the one part that uses it.
		parse: field(func(c *config) *string { return &c.Skin }, asIs), value: func(c *config) string { return c.Skin }},
	{env: "S3_PROJECTS_PREFIX", def: "projects", meaning: "key prefix of snapshot archives",
		// Checked by validate, with the key rule of the archives.
		parse: field(func(c *config) *string { return &c.ObjectPrefix }, asIs), value: func(c *config) string { return c.ObjectPrefix }},
	{env: "DATABASE_URL", def: "", meaning: "PostgreSQL store (libpq URL or key=value; PG* variables fill the gaps); empty: embedded SQLite",
		flag:  &flagSpec{name: "database-url", usage: "PostgreSQL store (env DATABASE_URL); empty: embedded SQLite", target: func(c *config) any { return &c.DatabaseURL }},
		parse: field(func(c *config) *string { return &c.DatabaseURL }, asIs), value: func(c *config) string { return redactDSN(c.DatabaseURL) }},
	{env: "SAILTUI_DB_POOL_SIZE", def: "max(4, CPUs)", meaning: "PostgreSQL connections in the pool",
		parse: field(func(c *config) *int { return &c.DBPoolSize }, intIn(1, 1000)), value: func(c *config) string {
			if c.DBPoolSize == 0 {
				return strconv.Itoa(max(4, runtime.NumCPU())) // pgxpool's default, unless the DSN sets pool_max_conns
			}
			return strconv.Itoa(c.DBPoolSize)
		}},
	{env: "SAILTUI_DB_STATEMENT_TIMEOUT", def: "30s", meaning: "PostgreSQL statement_timeout of every connection",
		parse: field(func(c *config) *time.Duration { return &c.DBStatementTimeout }, positive("30s")), value: func(c *config) string {
			return cmp.Or(c.DBStatementTimeout, postgres.DefaultStatementTimeout).String()
		}},
	// The S3 settings are read by the S3 object store itself (s3.ConfigFromEnv), with the
	// standard AWS_* chain they belong to.
	{env: "S3_BUCKET_NAME", def: "", meaning: "keep snapshot archives in this S3 bucket (else in the state directory)"},
	{env: "S3_ENDPOINT_URL", def: "", meaning: "S3-compatible endpoint (path-style addressing is then used)"},
	{env: "S3_REGION", def: "us-east-1", meaning: "S3 region (AWS_REGION also works); credentials come from the standard AWS_* chain"},
	{env: "S3_PART_SIZE", def: "5MiB", meaning: "size of each upload part: an upload holds 3 in memory, and an archive is at most 10,000 parts (48.8 GiB at 5MiB)"},
	{env: "SAILTUI_DEFAULT_COMMAND", def: "sailtui devserver --dir . --port \"$PORT\"", meaning: "what a container runs when neither it nor its TESSLATE.md names a command",
		parse: func(c *config, v string) error { c.DefaultCommand, c.defaultCommandSet = v, true; return nil },
		value: func(c *config) string { return c.DefaultCommand }},
	{env: "SAILTUI_INSTALL_DEPS", def: "true", meaning: "before an app's command, install its dependencies when package.json is there without node_modules (bun, pnpm, yarn or npm, by lock file), unless the command installs itself",
		parse: func(c *config, v string) error {
			b, err := boolean(v)
			c.SkipInstallDeps = !b
			return err
		},
		value: func(c *config) string { return strconv.FormatBool(!c.SkipInstallDeps) }},
	{env: "DEVSERVER_IMAGE", def: docker.DefaultImage, meaning: "docker mode: the image every container runs (make image builds it)",
		parse: field(func(c *config) *string { return &c.DevserverImage }, asIs), value: func(c *config) string { return orDefault(c.DevserverImage, docker.DefaultImage) }},
	{env: "APP_DOMAIN", def: docker.DefaultAppDomain, meaning: "docker mode: Traefik routes <slug>-<container>.<APP_DOMAIN> to a container",
		parse: field(func(c *config) *string { return &c.AppDomain }, asIs), value: func(c *config) string { return orDefault(c.AppDomain, docker.DefaultAppDomain) }},
	{env: "SAILTUI_DOCKER_NETWORK_PREFIX", def: docker.DefaultNetworkPrefix, meaning: "docker mode: project networks (and volumes) are <prefix>-<slug>",
		parse: field(func(c *config) *string { return &c.DockerNetworkPrefix }, asIs),
		value: func(c *config) string { return orDefault(c.DockerNetworkPrefix, docker.DefaultNetworkPrefix) }},
	{env: "SAILTUI_DOCKER_USER", def: "1000:1000 (as root), else your uid:gid", meaning: "docker mode: the non-root uid:gid containers run as",
		parse: field(func(c *config) *string { return &c.DockerUser }, asIs), value: func(c *config) string {
			if c.DockerUser != "" {
				return c.DockerUser
			}
			if os.Getuid() == 0 {
				return "1000:1000"
			}
			return fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
		}},
	{env: "SAILTUI_TRAEFIK_CONTAINER", def: "", meaning: "docker mode: the Traefik container, connected to every project network",
		parse: field(func(c *config) *string { return &c.TraefikContainer }, asIs), value: func(c *config) string { return c.TraefikContainer }},
	{env: "SAILTUI_DOCKER_LABELS", def: "", meaning: "docker mode: more labels for every container, network and volume, as key=value,key=value",
		parse: field(func(c *config) *map[string]string { return &c.DockerLabels }, labelList),
		value: func(c *config) string { return formatLabels(c.DockerLabels) }},
	{env: "USE_DOCKER_VOLUMES", def: "false", meaning: "docker mode: keep each project's files in a named volume <prefix>-<slug> instead of a host directory; sailtui must run on the Docker host, as root",
		parse: field(func(c *config) *bool { return &c.DockerVolumes }, boolean), value: func(c *config) string { return strconv.FormatBool(c.DockerVolumes) }},

	// Kubernetes mode. They are read and checked at start in every mode, like the docker
	// settings: a bad value is found before anything is touched, not when the cluster is
	// first opened. Their values show as given.
	{env: "KUBECONFIG", def: "~/.kube/config, else in-cluster", meaning: "kubernetes mode: the cluster, loaded as kubectl does (--context picks a context)",
		// client-go reads KUBECONFIG itself, as kubectl does; --context is a setting of its own
		// shown beside it.
		flag: &flagSpec{name: "context", usage: "kubernetes mode: kubeconfig context to use", target: func(c *config) any { return &c.KubeContext }},
		value: func(c *config) string {
			v := c.env["KUBECONFIG"]
			if c.KubeContext != "" {
				v += " (context " + c.KubeContext + ")"
			}
			return v
		}},
	{env: "K8S_STORAGE_CLASS", def: "(cluster default)", meaning: "kubernetes mode: storage class of project PVCs",
		parse: field(func(c *config) *string { return &c.Kube.StorageClass }, asIs)},
	{env: "K8S_PVC_SIZE", def: "5Gi", meaning: "kubernetes mode: size of a project's PVC",
		parse: field(func(c *config) *string { return &c.Kube.PVCSize }, checked(kubernetes.CheckPVCSize))},
	{env: "K8S_PVC_ACCESS_MODE", def: "ReadWriteOnce", meaning: "kubernetes mode: access mode of project PVCs",
		parse: field(func(c *config) *string { return &c.Kube.PVCAccessMode }, checked(kubernetes.CheckPVCAccessMode))},
	{env: "K8S_INGRESS_CLASS", def: "nginx", meaning: "kubernetes mode: ingress class of container Ingresses",
		parse: field(func(c *config) *string { return &c.Kube.IngressClass }, asIs)},
	{env: "K8S_WILDCARD_TLS_SECRET", def: "", meaning: "kubernetes mode: TLS secret of container Ingresses (https when set)",
		parse: field(func(c *config) *string { return &c.Kube.TLSSecret }, asIs)},
	{env: "K8S_COPY_TLS_SECRET_FROM", def: "", meaning: "kubernetes mode: namespace K8S_WILDCARD_TLS_SECRET is copied from into every project namespace (opt-in; needs get on that one secret there)",
		parse: field(func(c *config) *string { return &c.Kube.TLSSecretFrom }, asIs)},
	{env: "K8S_ENABLE_POD_AFFINITY", def: "true", meaning: "kubernetes mode: keep a project's pods on one node (they share one volume)",
		parse: field(func(c *config) *bool { return &c.Kube.PodAffinity }, boolean)},
	{env: "K8S_SNAPSHOT_CLASS", def: "(default class)", meaning: "kubernetes mode: VolumeSnapshotClass of hibernation and timeline snapshots",
		parse: field(func(c *config) *string { return &c.Kube.SnapshotClass }, asIs)},
	{env: "K8S_SNAPSHOT_READY_TIMEOUT_SECONDS", def: "300", meaning: "kubernetes mode: wait this long for readyToUse; on timeout nothing is deleted",
		parse: field(func(c *config) *time.Duration { return &c.Kube.SnapshotReadyTimeout }, count(time.Second, 1, "want a positive number of seconds"))},
	{env: "K8S_USE_S3_SNAPSHOTS", def: "false", meaning: "kubernetes mode: snapshots as archives in S3_BUCKET_NAME, streamed through the file-manager pod, instead of VolumeSnapshots",
		// validate checks that it has a bucket to go to.
		parse: field(func(c *config) *bool { return &c.KubeArchives }, boolean)},
	{env: "K8S_NAMESPACE_PREFIX", def: "proj-", meaning: "kubernetes mode: project namespaces are <prefix><project-id>",
		parse: field(func(c *config) *string { return &c.Kube.NamespacePrefix }, asIs)},
	{env: "K8S_INGRESS_NAMESPACE", def: "ingress-nginx", meaning: "kubernetes mode: namespace of the ingress controller (allowed in by the NetworkPolicy)",
		parse: field(func(c *config) *string { return &c.Kube.IngressNamespace }, asIs)},
	{env: "K8S_PLATFORM_NAMESPACE", def: "tesslate", meaning: "kubernetes mode: namespace of the platform (allowed in by the NetworkPolicy)",
		parse: field(func(c *config) *string { return &c.Kube.PlatformNamespace }, asIs)},
	{env: "K8S_SWEEPER_SERVICE_ACCOUNT", def: defaultSweeper, value: func(c *config) string { return cmp.Or(c.Kube.Sweeper, "-") }, meaning: "kubernetes mode: namespace/name bound in each project namespace for the headless sweeps (\"-\": none)",
		parse: field(func(c *config) *string { return &c.Kube.Sweeper }, func(v string) (string, error) {
			if v == "-" {
				return "", nil
			}
			return v, kubernetes.CheckSweeper(v)
		})},
	{env: "K8S_FILE_MANAGER_IMAGE", def: "DEVSERVER_IMAGE", meaning: "kubernetes mode: image of the file-manager pod",
		parse: field(func(c *config) *string { return &c.Kube.FileManagerImage }, asIs),
		value: func(c *config) string {
			return cmp.Or(c.Kube.FileManagerImage, c.DevserverImage, docker.DefaultImage)
		}},
	{env: "K8S_IMAGE_PULL_SECRET", def: "", meaning: "kubernetes mode: Secret every pod pulls its images with (it must be in each project namespace: see K8S_COPY_PULL_SECRET_FROM)",
		parse: field(func(c *config) *string { return &c.Kube.ImagePullSecret }, checked(kubernetes.CheckImagePullSecret))},
	{env: "K8S_COPY_PULL_SECRET_FROM", def: "", meaning: "kubernetes mode: namespace K8S_IMAGE_PULL_SECRET is copied from into every project namespace (opt-in; needs get on that one secret there)",
		parse: field(func(c *config) *string { return &c.Kube.PullSecretFrom }, asIs)},
	{env: "K8S_IMAGE_PULL_POLICY", def: "IfNotPresent", meaning: "kubernetes mode: image pull policy of every pod (Always, IfNotPresent, Never)",
		parse: field(func(c *config) *string { return &c.Kube.ImagePullPolicy }, checked(kubernetes.CheckImagePullPolicy))},
	{env: "K8S_INGRESS_ANNOTATIONS", def: "", meaning: "kubernetes mode: more Ingress annotations, key=value,key=value or a JSON object (over the websocket timeouts sailtui sets)",
		parse: field(func(c *config) *map[string]string { return &c.Kube.IngressAnnotations }, kubernetes.ParseIngressAnnotations)},
	{env: "K8S_ALLOW_ROOT_SERVICES", def: "false", meaning: "kubernetes mode: let service containers of images that start as root (postgres, mysql, mariadb, mongo, redis, valkey) run as root; project namespaces then enforce Pod Security baseline",
		parse: field(func(c *config) *bool { return &c.Kube.AllowRootServices }, boolean)},
}

// defaultSweeper is the service account the manifests create for the headless sweeps.
const defaultSweeper = kubernetes.SweeperNamespace + "/" + kubernetes.SweeperServiceAccount

// bindSettings registers the flags of the table: persistent ones on global, the console's own
// on root. A flag's default is the value the environment gave, so --help shows it.
func (c *config) bindSettings(global, root *pflag.FlagSet) {
	for _, s := range settings {
		f := s.flag
		if f == nil || f.sweep {
			continue
		}
		fs := global
		if f.root {
			fs = root
		}
		switch p := f.target(c).(type) {
		case *string:
			fs.StringVar(p, f.name, *p, f.usage)
		case *bool:
			fs.BoolVar(p, f.name, *p, f.usage)
		case *time.Duration:
			fs.DurationVar(p, f.name, *p, f.usage)
		default:
			panic(fmt.Sprintf("setting %s: flag --%s of type %T", s.env, f.name, p))
		}
	}
}
