package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/adrg/xdg"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sailtui/sailtui/backends/docker"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// config is sailtui's configuration: flags win over the environment, the environment over
// defaults. Environment names follow the reference platform where it has one.
type config struct {
	StateDir         string
	Mode             string
	IdleTimeout      time.Duration
	StopIdleTimeout  time.Duration
	OpTimeout        time.Duration
	UseWait          time.Duration
	SweepConcurrency int
	ReadOnly         bool
	Output           string
	Skin             string
	ObjectPrefix     string
	DefaultCommand   string
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
	// defaultCommandSet tells a command given by SAILTUI_DEFAULT_COMMAND from the built-in
	// one, which differs by mode (this binary's path means nothing inside a container).
	defaultCommandSet bool
}

// configVar documents one setting: the README's config table is this list.
type configVar struct {
	Env, Flag, Default, Meaning string
}

var configVars = []configVar{
	{"SAILTUI_STATE_DIR", "--state-dir", "$XDG_DATA_HOME/sailtui", "where the embedded store, project directories, logs and archives live"},
	{"DEPLOYMENT_MODE", "--mode", "local", "runtime: local, docker or kubernetes"},
	{"K8S_HIBERNATION_IDLE_MINUTES", "--idle (sweep)", "30", "minutes without activity before the sweep hibernates a project"},
	{"SAILTUI_STOP_IDLE_MINUTES", "--stop-idle (sweep)", "0 (off)", "first idle tier: stop a project's containers after this many idle minutes, keep its files; hibernate after the idle timeout"},
	{"SAILTUI_OP_TIMEOUT", "", "10m", "an operation silent this long is taken over (a holder on this host known dead at once)"},
	{"SAILTUI_USE_WAIT", "", "30s", "how long hibernate, wake, restore, snapshot and delete wait for file operations and execs in progress (asked to stop after a third of it) before refusing"},
	{"SAILTUI_SWEEP_CONCURRENCY", "--concurrency (sweep)", "16", "projects hibernated at once by one sweep"},
	{"SAILTUI_READONLY", "--readonly", "false", "refuse every action that changes something"},
	{"SAILTUI_SKIN", "--skin", "dark", "console colours: dark or light (NO_COLOR turns colour off)"},
	{"S3_PROJECTS_PREFIX", "", "projects", "key prefix of snapshot archives"},
	{"DATABASE_URL", "--database-url", "", "PostgreSQL store (libpq URL or key=value; PG* variables fill the gaps); empty: embedded SQLite"},
	{"SAILTUI_DB_POOL_SIZE", "", "max(4, CPUs)", "PostgreSQL connections in the pool"},
	{"SAILTUI_DB_STATEMENT_TIMEOUT", "", "30s", "PostgreSQL statement_timeout of every connection"},
	{"S3_BUCKET_NAME", "", "", "keep snapshot archives in this S3 bucket (else in the state directory)"},
	{"S3_ENDPOINT_URL", "", "", "S3-compatible endpoint (path-style addressing is then used)"},
	{"S3_REGION", "", "us-east-1", "S3 region (AWS_REGION also works); credentials come from the standard AWS_* chain"},
	{"S3_PART_SIZE", "", "5MiB", "size of each upload part: an upload holds 3 in memory, and an archive is at most 10,000 parts (48.8 GiB at 5MiB)"},
	{"SAILTUI_DEFAULT_COMMAND", "", "sailtui devserver --dir . --port \"$PORT\"", "what a container runs when neither it nor its TESSLATE.md names a command"},
	{"DEVSERVER_IMAGE", "", docker.DefaultImage, "docker mode: the image every container runs"},
	{"APP_DOMAIN", "", docker.DefaultAppDomain, "docker mode: Traefik routes <slug>-<container>.<APP_DOMAIN> to a container"},
	{"SAILTUI_DOCKER_NETWORK_PREFIX", "", docker.DefaultNetworkPrefix, "docker mode: project networks (and volumes) are <prefix>-<slug>"},
	{"SAILTUI_DOCKER_USER", "", "1000:1000 (as root), else your uid:gid", "docker mode: the non-root uid:gid containers run as"},
	{"SAILTUI_TRAEFIK_CONTAINER", "", "", "docker mode: the Traefik container, connected to every project network"},
	{"USE_DOCKER_VOLUMES", "", "false", "docker mode: keep each project's files in a named volume <prefix>-<slug> instead of a host directory; sailtui must run on the Docker host, as root"},
}

func defaultConfig() config {
	return config{
		StateDir:         filepath.Join(xdg.DataHome, "sailtui"),
		Mode:             "local",
		IdleTimeout:      30 * time.Minute,
		OpTimeout:        10 * time.Minute,
		UseWait:          engine.DefaultUseWait,
		SweepConcurrency: 16,
		Output:           "table",
		Skin:             "dark",
		ObjectPrefix:     "projects",
		DefaultCommand:   defaultCommand(),
	}
}

// fromEnv applies the environment over the defaults; bad values are errors, not silently ignored.
func (c *config) fromEnv() error {
	str := func(name string, dst *string) {
		if v := os.Getenv(name); v != "" {
			*dst = v
		}
	}
	str("SAILTUI_STATE_DIR", &c.StateDir)
	str("DEPLOYMENT_MODE", &c.Mode)
	str("SAILTUI_SKIN", &c.Skin)
	str("S3_PROJECTS_PREFIX", &c.ObjectPrefix)
	str("SAILTUI_DEFAULT_COMMAND", &c.DefaultCommand)
	c.defaultCommandSet = os.Getenv("SAILTUI_DEFAULT_COMMAND") != ""
	str("DEVSERVER_IMAGE", &c.DevserverImage)
	str("APP_DOMAIN", &c.AppDomain)
	str("SAILTUI_DOCKER_NETWORK_PREFIX", &c.DockerNetworkPrefix)
	str("SAILTUI_DOCKER_USER", &c.DockerUser)
	str("SAILTUI_TRAEFIK_CONTAINER", &c.TraefikContainer)
	if v := os.Getenv("USE_DOCKER_VOLUMES"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("USE_DOCKER_VOLUMES=%q: want true or false", v)
		}
		c.DockerVolumes = b
	}
	str("DATABASE_URL", &c.DatabaseURL)
	if v := os.Getenv("SAILTUI_DB_POOL_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1000 {
			return fmt.Errorf("SAILTUI_DB_POOL_SIZE=%q: want a number from 1 to 1000", v)
		}
		c.DBPoolSize = n
	}
	if v := os.Getenv("SAILTUI_DB_STATEMENT_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("SAILTUI_DB_STATEMENT_TIMEOUT=%q: want a positive duration such as 30s", v)
		}
		c.DBStatementTimeout = d
	}
	if v := os.Getenv("K8S_HIBERNATION_IDLE_MINUTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("K8S_HIBERNATION_IDLE_MINUTES=%q: want a positive number of minutes", v)
		}
		c.IdleTimeout = time.Duration(n) * time.Minute
	}
	if v := os.Getenv("SAILTUI_STOP_IDLE_MINUTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("SAILTUI_STOP_IDLE_MINUTES=%q: want a number of minutes (0 turns the tier off)", v)
		}
		c.StopIdleTimeout = time.Duration(n) * time.Minute
	}
	if v := os.Getenv("SAILTUI_OP_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("SAILTUI_OP_TIMEOUT=%q: want a positive duration such as 10m", v)
		}
		c.OpTimeout = d
	}
	if v := os.Getenv("SAILTUI_USE_WAIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("SAILTUI_USE_WAIT=%q: want a positive duration such as 30s", v)
		}
		c.UseWait = d
	}
	if v := os.Getenv("SAILTUI_SWEEP_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1024 {
			return fmt.Errorf("SAILTUI_SWEEP_CONCURRENCY=%q: want a number from 1 to 1024", v)
		}
		c.SweepConcurrency = n
	}
	if v := os.Getenv("SAILTUI_READONLY"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("SAILTUI_READONLY=%q: want true or false", v)
		}
		c.ReadOnly = b
	}
	return nil
}

// bindGlobal registers the flags every command shares.
func (c *config) bindGlobal(fs *pflag.FlagSet) {
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "state directory (env SAILTUI_STATE_DIR)")
	fs.StringVar(&c.Mode, "mode", c.Mode, "deployment mode: local, docker or kubernetes (env DEPLOYMENT_MODE)")
	fs.StringVar(&kubeContext, "context", "", "kubernetes mode: kubeconfig context to use")
	fs.StringVarP(&c.Output, "output", "o", c.Output, "output format: table or json")
	fs.BoolVar(&c.ReadOnly, "readonly", c.ReadOnly, "refuse every action that changes something (env SAILTUI_READONLY)")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL store (env DATABASE_URL); empty: embedded SQLite")
}

func (c *config) validate() error {
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
	default:
		return fmt.Errorf("DEPLOYMENT_MODE=%q: want local, docker or kubernetes", c.Mode)
	}
	if err := archive.CheckPrefix(c.ObjectPrefix); err != nil {
		return fmt.Errorf("S3_PROJECTS_PREFIX=%q: %v; use slash-separated names such as sailtui/projects", c.ObjectPrefix, err)
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

// configCmd shows every setting, where it comes from and its value now.
func configCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Show every setting: environment variable, flag, default and current value",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			current := map[string]string{
				"SAILTUI_STATE_DIR":             a.cfg.StateDir,
				"DEPLOYMENT_MODE":               a.cfg.Mode,
				"K8S_HIBERNATION_IDLE_MINUTES":  strconv.Itoa(int(a.cfg.IdleTimeout.Minutes())),
				"SAILTUI_STOP_IDLE_MINUTES":     strconv.Itoa(int(a.cfg.StopIdleTimeout.Minutes())),
				"SAILTUI_OP_TIMEOUT":            a.cfg.OpTimeout.String(),
				"SAILTUI_USE_WAIT":              a.cfg.UseWait.String(),
				"SAILTUI_SWEEP_CONCURRENCY":     strconv.Itoa(a.cfg.SweepConcurrency),
				"SAILTUI_READONLY":              strconv.FormatBool(a.cfg.ReadOnly),
				"SAILTUI_SKIN":                  a.cfg.Skin,
				"S3_PROJECTS_PREFIX":            a.cfg.ObjectPrefix,
				"SAILTUI_DEFAULT_COMMAND":       a.cfg.DefaultCommand,
				"DATABASE_URL":                  redactDSN(a.cfg.DatabaseURL),
				"SAILTUI_DB_POOL_SIZE":          strconv.Itoa(a.cfg.DBPoolSize),
				"SAILTUI_DB_STATEMENT_TIMEOUT":  a.cfg.DBStatementTimeout.String(),
				"S3_BUCKET_NAME":                os.Getenv("S3_BUCKET_NAME"),
				"S3_ENDPOINT_URL":               os.Getenv("S3_ENDPOINT_URL"),
				"S3_REGION":                     os.Getenv("S3_REGION"),
				"S3_PART_SIZE":                  os.Getenv("S3_PART_SIZE"),
				"DEVSERVER_IMAGE":               orDefault(a.cfg.DevserverImage, docker.DefaultImage),
				"APP_DOMAIN":                    orDefault(a.cfg.AppDomain, docker.DefaultAppDomain),
				"SAILTUI_DOCKER_NETWORK_PREFIX": orDefault(a.cfg.DockerNetworkPrefix, docker.DefaultNetworkPrefix),
				"SAILTUI_DOCKER_USER":           a.cfg.DockerUser,
				"SAILTUI_TRAEFIK_CONTAINER":     a.cfg.TraefikContainer,
				"USE_DOCKER_VOLUMES":            strconv.FormatBool(a.cfg.DockerVolumes),
			}
			for _, v := range kubeVars {
				current[v.Env] = os.Getenv(v.Env)
			}
			if kubeContext != "" {
				current["KUBECONFIG"] += " (context " + kubeContext + ")"
			}
			type row struct {
				Env     string `json:"env"`
				Flag    string `json:"flag,omitempty"`
				Default string `json:"default"`
				Value   string `json:"value"`
				Meaning string `json:"meaning"`
			}
			rows := make([]row, len(configVars))
			for i, v := range configVars {
				rows[i] = row{v.Env, v.Flag, v.Default, current[v.Env], v.Meaning}
			}
			return a.out(cmd).emit(rows, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "ENV\tFLAG\tVALUE\tMEANING")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Env, r.Flag, r.Value, r.Meaning)
				}
			})
		},
	}
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
