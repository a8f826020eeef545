package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sailtui/sailtui/backends/docker"
	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/local"
	"github.com/sailtui/sailtui/backends/routermetrics"
	s3store "github.com/sailtui/sailtui/backends/s3"
	"github.com/sailtui/sailtui/backends/webhook"
	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// parts is what openEngine built, for commands that need more than the engine (describe, close).
type parts struct {
	eng   *engine.Engine
	store engine.Store
	// runtime is the engine's, for the tests that look behind it.
	runtime engine.Runtime
	// sweepOptions is the runtime's sweep policy (kubernetes.Config.SweepOptions), nil when
	// it has none.
	sweepOptions func(engine.SweepOptions) engine.SweepOptions
	close        func()
}

// webhookDrain is how long a process that is done waits for its webhook deliveries.
const webhookDrain = 5 * time.Second

// openEngine selects Runtime, Volumes, Store and ObjectStore from the config. With no config at
// all this is the embedded default: local runtime, SQLite store, directory object store.
// Tests pass tweaks to swap or wrap parts of the engine config.
func openEngine(ctx context.Context, cfg config, log *slog.Logger, tweaks ...func(*engine.Config)) (*parts, error) {
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", cfg.StateDir, err)
	}
	// A cluster that does not answer is reported before the store is opened (and migrated).
	var (
		krt     *kubernetes.Runtime
		objects engine.ObjectStore // kubernetes: the bucket, when there is one or archives need it
	)
	if cfg.Mode == "kubernetes" {
		var err error
		_, bucket, _ := s3store.ConfigFromEnv() // a bad S3 setting is reported by openObjects
		if bucket || cfg.KubeArchives {
			if objects, err = openObjects(ctx, cfg, log); err != nil {
				return nil, err
			}
		}
		var logs engine.ObjectStore
		if bucket {
			logs = objects // a log kept in the state directory would be lost in the sweep's pod
		}
		if krt, err = openKubernetes(ctx, cfg, log, logs); err != nil {
			return nil, err
		}
	}
	store, notifier, closeStore, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.WebhookURL != "" {
		hook, err := webhook.New(notifier, webhook.Options{URL: cfg.WebhookURL, Secret: cfg.WebhookSecret, Logger: log})
		if err != nil {
			closeStore()
			return nil, err
		}
		notifier = hook
		storeOnly := closeStore
		closeStore = func() {
			// What the receiver has not taken yet gets a few seconds after the work is done;
			// a dead receiver costs the exit that long, never the work.
			ctx, cancel := context.WithTimeout(context.Background(), webhookDrain)
			defer cancel()
			if err := hook.Close(ctx); err != nil {
				log.Warn("webhook", "err", err)
			}
			storeOnly()
		}
	}
	var (
		rt           engine.Runtime
		vols         engine.Volumes
		closeRuntime = func() {}
	)
	if krt != nil {
		rt, vols = krt, kubernetes.NewSnapshots(krt)
		if cfg.KubeArchives {
			// The S3 credentials stay in this process: the pod only runs tar.
			vols = kubernetes.NewArchiveVolumes(krt, objects, archive.SandwichOptions{Prefix: cfg.ObjectPrefix})
		}
	} else {
		srt, closeSrt, err := openRuntime(cfg)
		if err != nil {
			closeStore()
			return nil, err
		}
		objects, err := openObjects(ctx, cfg, log)
		if err != nil {
			closeSrt()
			closeStore()
			return nil, err
		}
		rt, closeRuntime = srt, closeSrt
		vols = archive.NewSandwich(objects, srt, archive.SandwichOptions{Prefix: cfg.ObjectPrefix})
	}
	closeAll := func() {
		closeRuntime()
		closeStore()
	}
	var router engine.RouterMetrics
	if cfg.RouterMetricsURL != "" {
		rm, err := routermetrics.New(cfg.RouterMetricsURL)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%w: %w", err, engine.ErrBadInput)
		}
		router = rm
	}
	ecfg := engine.Config{
		RouterMetrics: router,
		Store:         store, Runtime: rt, Volumes: vols, Notifier: notifier, Logger: log,
		IdleTimeout: cfg.IdleTimeout, StopIdleTimeout: cfg.StopIdleTimeout, MaxKeepAlive: cfg.MaxKeepAlive, IdleWarning: cfg.IdleWarning, OpTimeout: cfg.OpTimeout, UseWait: cfg.UseWait, StartTimeout: cfg.StartTimeout, SweepConcurrency: cfg.SweepConcurrency,
		ReadOnly: cfg.ReadOnly, DefaultCommand: cfg.DefaultCommand, StepHook: crashHook(),
		SkipInstallDeps: cfg.SkipInstallDeps,
	}
	for _, t := range tweaks {
		t(&ecfg)
	}
	eng, err := engine.New(ecfg)
	if err != nil {
		closeAll()
		return nil, err
	}
	p := &parts{eng: eng, store: store, runtime: ecfg.Runtime, close: closeAll}
	if krt != nil {
		p.sweepOptions = cfg.Kube.SweepOptions
	}
	return p, nil
}

// storageRuntime is a runtime whose project storage is one host directory per project, which
// the archive sandwich snapshots and restores.
type storageRuntime interface {
	engine.Runtime
	archive.StorageDirs
}

// openRuntime selects the runtime of DEPLOYMENT_MODE.
func openRuntime(cfg config) (storageRuntime, func(), error) {
	if cfg.Mode == "docker" {
		rt, err := docker.New(docker.Config{
			ProjectsDir:   filepath.Join(cfg.StateDir, "users"),
			StateDir:      cfg.StateDir,
			Image:         cfg.DevserverImage,
			AppDomain:     cfg.AppDomain,
			NetworkPrefix: cfg.DockerNetworkPrefix,
			User:          cfg.DockerUser,
			Router:        cfg.TraefikContainer,
			Volumes:       cfg.DockerVolumes,
			Labels:        cfg.DockerLabels,
			LogMaxBytes:   int64(cfg.LogMaxMiB) << 20,
			ReadOnly:      cfg.ReadOnly,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("docker runtime: %w", err)
		}
		return rt, func() { waitReaped(rt); _ = rt.Close() }, nil
	}
	rt, err := local.New(local.Config{
		ProjectsDir: filepath.Join(cfg.StateDir, "projects"),
		RunDir:      filepath.Join(cfg.StateDir, "run"),
		LogDir:      filepath.Join(cfg.StateDir, "logs"),
		LogMaxBytes: int64(cfg.LogMaxMiB) << 20,
		ReadOnly:    cfg.ReadOnly,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("local runtime: %w", err)
	}
	return rt, func() { waitReaped(rt) }, nil
}

// waitReaped lets the background delete of the trees a hibernation or deletion moved to the
// trash finish, for a while, before sailtui exits (what is left, the next run does).
func waitReaped(r engine.Reaper) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = r.WaitReaped(ctx)
}

// defaultCommand serves a container's directory with this binary's devserver when the container
// has no command of its own.
func defaultCommand() string {
	exe, err := os.Executable()
	if err != nil {
		exe = "sailtui"
	}
	return shellQuote(exe) + ` devserver --dir . --port "$PORT"`
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// crashHook lets the crash-safety tests kill this process (SIGKILL, no cleanup) right after a
// named journaled step: SAILTUI_TEST_CRASH_AT=hibernate:snapshot-written. And the interrupt
// tests interrupt it there as a Ctrl-C does (SIGINT: SAILTUI_TEST_INTERRUPT_AT=hibernate:stopped);
// the step returns once the command's context has seen the signal, so the operation goes on
// interrupted from that step, the same every run.
func crashHook() func(engine.OpKind, string) {
	crashAt, interruptAt := os.Getenv("SAILTUI_TEST_CRASH_AT"), os.Getenv("SAILTUI_TEST_INTERRUPT_AT")
	if crashAt == "" && interruptAt == "" {
		return nil
	}
	return func(kind engine.OpKind, step string) {
		switch string(kind) + ":" + step {
		case crashAt:
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		case interruptAt:
			_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
			<-signalled
		}
	}
}
