package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/adrg/xdg"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/routermetrics"
	"github.com/sailtui/sailtui/backends/webhook"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// config is sailtui's configuration: flags win over the environment, the environment over
// defaults. Environment names follow the reference platform where it has one.
type config struct {
	StateDir        string
	Mode            string
	IdleTimeout     time.Duration
	StopIdleTimeout time.Duration
	// IdleWarning is how long before a hibernation the sweep warns (0: never).
	IdleWarning time.Duration
	// MaxKeepAlive bounds project keep-alive --for.
	MaxKeepAlive time.Duration
	// WebhookURL receives each idle warning and status change, signed with WebhookSecret.
	WebhookURL, WebhookSecret string
	// RouterMetricsURL is the router's Prometheus endpoint: requests through it are activity.
	RouterMetricsURL string
	OpTimeout        time.Duration
	UseWait          time.Duration
	StartTimeout     time.Duration
	SweepConcurrency int
	// LogMaxMiB caps each container's kept log (local and docker), current and rotated file.
	LogMaxMiB      int
	ReadOnly       bool
	Output         string
	Skin           string
	ObjectPrefix   string
	DefaultCommand string
	// DatabaseURL selects the PostgreSQL store (empty: the embedded SQLite store).
	DatabaseURL        string
	DBPoolSize         int
	DBStatementTimeout time.Duration
	Yes                bool

	// Docker mode (DEPLOYMENT_MODE=docker).
	DevserverImage      string
	AppDomain           string
	DockerNetworkPrefix string
	DockerUser          string
	TraefikContainer    string
	// DockerVolumes keeps project files in named volumes (USE_DOCKER_VOLUMES).
	DockerVolumes bool
	// DockerLabels go on everything docker mode creates (SAILTUI_DOCKER_LABELS).
	DockerLabels map[string]string
	// SkipInstallDeps: no dependency install before an app's command (SAILTUI_INSTALL_DEPS=false).
	SkipInstallDeps bool

	// Kubernetes mode: Kube holds the K8S_* settings (kubernetesConfig adds the cluster and
	// the images), KubeContext is --context, KubeArchives is K8S_USE_S3_SNAPSHOTS.
	Kube         kubernetes.Config
	KubeContext  string
	KubeArchives bool

	// env is every variable of the settings table as the environment gave it, for the
	// settings `sailtui config` shows as given.
	env map[string]string
	// defaultCommandSet tells a command given by SAILTUI_DEFAULT_COMMAND from the built-in
	// one, which differs by mode (this binary's path means nothing inside a container).
	defaultCommandSet bool
}

func defaultConfig() config {
	return config{
		StateDir:         filepath.Join(xdg.DataHome, "sailtui"),
		Mode:             "local",
		IdleTimeout:      30 * time.Minute,
		IdleWarning:      5 * time.Minute,
		MaxKeepAlive:     engine.DefaultMaxKeepAlive,
		OpTimeout:        10 * time.Minute,
		UseWait:          engine.DefaultUseWait,
		StartTimeout:     engine.DefaultStartTimeout,
		SweepConcurrency: 16,
		LogMaxMiB:        8,
		Output:           "table",
		Skin:             "dark",
		ObjectPrefix:     "projects",
		DefaultCommand:   defaultCommand(),
		Kube:             kubernetes.Config{PodAffinity: true, Sweeper: defaultSweeper},
	}
}

// fromEnv applies the environment over the defaults, as the settings table says; bad values are
// errors, not silently ignored.
func (c *config) fromEnv() error {
	c.env = map[string]string{}
	for _, s := range settings {
		v := os.Getenv(s.env)
		c.env[s.env] = v
		if v == "" || s.parse == nil {
			continue
		}
		if err := s.parse(c, v); err != nil {
			return fmt.Errorf("%s=%q: %w", s.env, v, err)
		}
	}
	return nil
}

// bindFlags registers the flags of the settings table (and --output, which has no
// environment variable): global ones on every command, the console's own on root.
func (c *config) bindFlags(global, root *pflag.FlagSet) {
	c.bindSettings(global, root)
	global.StringVarP(&c.Output, "output", "o", c.Output, "output format: table or json")
}

// checkHeadlessStore refuses a headless sweep in a pod (kubernetes mode on the in-cluster
// service account) without DATABASE_URL: its embedded store would be a fresh SQLite in the
// pod's scratch space, so every run would find no project and report success.
func (c *config) checkHeadlessStore() error {
	inPod := os.Getenv("KUBERNETES_SERVICE_HOST") != "" && c.env["KUBECONFIG"] == "" && c.KubeContext == ""
	if c.Mode == "kubernetes" && inPod && c.DatabaseURL == "" {
		return fmt.Errorf("a headless sweep in a pod needs DATABASE_URL (the platform's PostgreSQL): without it the store would be an empty SQLite in the pod, and the sweep would find nothing: %w", engine.ErrBadInput)
	}
	return nil
}

func (c *config) validate() error {
	if c.StartTimeout <= 0 {
		return fmt.Errorf("--start-timeout %s: want a positive duration such as 10m", c.StartTimeout)
	}
	switch c.Output {
	case "table", "json":
	default:
		return fmt.Errorf("--output %q: want table or json", c.Output)
	}
	switch strings.ToLower(c.Mode) {
	case "local", "":
		c.Mode = "local"
	case "docker":
		c.Mode = "docker"
		if !c.defaultCommandSet {
			// The image has sailtui on its PATH; this binary's own path is not in a container
			// (nor in a pod, in kubernetes mode).
			c.DefaultCommand = dockerDefaultCommand
		}
	case "kubernetes":
		c.Mode = "kubernetes"
		if !c.defaultCommandSet {
			c.DefaultCommand = dockerDefaultCommand
		}
		if c.KubeArchives && c.env["S3_BUCKET_NAME"] == "" {
			// A directory would be on whichever machine or pod ran the hibernation (an
			// emptyDir in a CronJob pod), out of reach of the next wake.
			return fmt.Errorf("K8S_USE_S3_SNAPSHOTS=true needs S3_BUCKET_NAME: archives kept in a local directory would be lost with the pod that made them")
		}
	default:
		return fmt.Errorf("DEPLOYMENT_MODE=%q: want local, docker or kubernetes", c.Mode)
	}
	if err := archive.CheckPrefix(c.ObjectPrefix); err != nil {
		return fmt.Errorf("S3_PROJECTS_PREFIX=%q: %w; use slash-separated names such as sailtui/projects", c.ObjectPrefix, err)
	}
	if err := webhook.Check(c.WebhookURL, c.WebhookSecret); err != nil {
		return err
	}
	if c.RouterMetricsURL != "" {
		if _, err := routermetrics.New(c.RouterMetricsURL); err != nil {
			return err
		}
	}
	if c.StateDir == "" {
		return fmt.Errorf("state directory is empty: set --state-dir or SAILTUI_STATE_DIR")
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return fmt.Errorf("state directory %q: %w", c.StateDir, err)
	}
	c.StateDir = abs
	return nil
}

// configCmd shows every setting, its value now and where that came from.
func configCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Show every setting: environment variable, flag, default, value now and where it came from",
		Long: `Show every setting: its environment variable, its flag, its default, the value sailtui runs
with now (a default is shown as what it amounts to here, not as empty or 0) and where that value
came from: default, env or flag. Flags win over the environment, the environment over defaults.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			type row struct {
				Env     string `json:"env"`
				Flag    string `json:"flag,omitempty"`
				Default string `json:"default"`
				Value   string `json:"value"`
				// Source is where the value came from: default, env or flag.
				Source  string `json:"source"`
				Meaning string `json:"meaning"`
			}
			// What a start would make of the settings (the mode's default command, an absolute
			// state directory); a bad value is reported after the table, which shows it.
			verr := a.cfg.validate()
			rows := make([]row, len(settings))
			for i, s := range settings {
				source := settingSource(cmd, a.cfg, s)
				value := a.cfg.env[s.env]
				if s.value != nil {
					value = s.value(&a.cfg)
				}
				if source == "default" && s.def != "" && (value == "" || value == "0" || value == "0s") {
					// The field is unset and the part that reads it applies the default.
					value = s.def
				}
				rows[i] = row{s.env, s.flag.shown(), s.def, value, source, s.meaning}
			}
			err := a.out(cmd).emit(rows, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "ENV\tFLAG\tVALUE\tSOURCE\tMEANING")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Env, r.Flag, r.Value, r.Source, r.Meaning)
				}
			})
			if err == nil && verr != nil {
				err = fmt.Errorf("%w: %w", verr, engine.ErrBadInput)
			}
			return err
		},
	}
}

// settingSource says where a setting's value came from: its flag (when given on this command
// line), else the environment, else the default.
func settingSource(cmd *cobra.Command, c config, s setting) string {
	if f := s.flag; f != nil && !f.sweep {
		fs := cmd.Flags()
		if f.root {
			fs = cmd.Root().Flags()
		}
		if fl := fs.Lookup(f.name); fl != nil && fl.Changed {
			return "flag"
		}
	}
	if c.env[s.env] != "" {
		return "env"
	}
	return "default"
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// dockerDefaultCommand is the default container command in docker mode: the image's devserver.
const dockerDefaultCommand = `sailtui devserver --dir . --port "$PORT"`

// redactDSN hides a password in a database URL (key=value DSNs are shown only as "set").
func redactDSN(dsn string) string {
	if dsn == "" {
		return ""
	}
	if strings.Contains(dsn, "://") {
		return engine.RedactURL(dsn)
	}
	return "(set)"
}
