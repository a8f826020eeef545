package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// Every setting of the table is read from the environment with the message of its kind when
// the value is bad, kubernetes settings included: all of them fail when the configuration is
// read, before anything is opened.
func TestConfigBadValues(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{"USE_DOCKER_VOLUMES", "x", `USE_DOCKER_VOLUMES="x": want true or false`},
		{"SAILTUI_DB_POOL_SIZE", "0", `SAILTUI_DB_POOL_SIZE="0": want a number from 1 to 1000`},
		{"SAILTUI_DB_POOL_SIZE", "1001", `SAILTUI_DB_POOL_SIZE="1001": want a number from 1 to 1000`},
		{"SAILTUI_DB_STATEMENT_TIMEOUT", "0s", `SAILTUI_DB_STATEMENT_TIMEOUT="0s": want a positive duration such as 30s`},
		{"K8S_HIBERNATION_IDLE_MINUTES", "0", `K8S_HIBERNATION_IDLE_MINUTES="0": want a positive number of minutes`},
		{"K8S_HIBERNATION_IDLE_MINUTES", "ten", `K8S_HIBERNATION_IDLE_MINUTES="ten": want a positive number of minutes`},
		{"SAILTUI_STOP_IDLE_MINUTES", "-1", `SAILTUI_STOP_IDLE_MINUTES="-1": want a number of minutes (0 turns the tier off)`},
		{"SAILTUI_OP_TIMEOUT", "-1m", `SAILTUI_OP_TIMEOUT="-1m": want a positive duration such as 10m`},
		{"SAILTUI_USE_WAIT", "soon", `SAILTUI_USE_WAIT="soon": want a positive duration such as 30s`},
		{"SAILTUI_SWEEP_CONCURRENCY", "1025", `SAILTUI_SWEEP_CONCURRENCY="1025": want a number from 1 to 1024`},
		{"SAILTUI_READONLY", "maybe", `SAILTUI_READONLY="maybe": want true or false`},
		{"K8S_ENABLE_POD_AFFINITY", "maybe", `K8S_ENABLE_POD_AFFINITY="maybe": want true or false`},
		{"K8S_USE_S3_SNAPSHOTS", "maybe", `K8S_USE_S3_SNAPSHOTS="maybe": want true or false`},
		{"K8S_SNAPSHOT_READY_TIMEOUT_SECONDS", "0", `K8S_SNAPSHOT_READY_TIMEOUT_SECONDS="0": want a positive number of seconds`},
		{"K8S_PVC_SIZE", "big", `K8S_PVC_SIZE="big": quantities must match`},
		{"K8S_PVC_ACCESS_MODE", "ReadOnly", `K8S_PVC_ACCESS_MODE="ReadOnly": want ReadWriteOnce, ReadWriteMany or ReadWriteOncePod`},
		{"K8S_SWEEPER_SERVICE_ACCOUNT", "sweeper", `K8S_SWEEPER_SERVICE_ACCOUNT="sweeper": want namespace/name`},
		{"K8S_IMAGE_PULL_POLICY", "Sometimes", `K8S_IMAGE_PULL_POLICY="Sometimes": want Always, IfNotPresent or Never`},
		{"K8S_IMAGE_PULL_SECRET", "Reg_Cred", `K8S_IMAGE_PULL_SECRET="Reg_Cred": want the name of a Secret`},
		{"K8S_INGRESS_ANNOTATIONS", "timeout", `K8S_INGRESS_ANNOTATIONS="timeout": "timeout" has no '='`},
		{"K8S_INGRESS_ANNOTATIONS", "bad key!=1", `K8S_INGRESS_ANNOTATIONS="bad key!=1": annotation key "bad key!"`},
		{"K8S_INGRESS_ANNOTATIONS", `{"a": 1}`, `K8S_INGRESS_ANNOTATIONS="{\"a\": 1}": json: cannot unmarshal number`},
		{"K8S_ALLOW_ROOT_SERVICES", "yes please", `K8S_ALLOW_ROOT_SERVICES="yes please": want true or false`},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			cfg := defaultConfig()
			err := cfg.fromEnv()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("fromEnv: %v, want %s", err, tc.want)
			}
		})
	}
}

// Good values land where the parts read them; the kubernetes ones in the runtime's config.
func TestConfigFromEnv(t *testing.T) {
	for k, v := range map[string]string{
		"K8S_HIBERNATION_IDLE_MINUTES": "45", "SAILTUI_STOP_IDLE_MINUTES": "0", "SAILTUI_USE_WAIT": "7s",
		"SAILTUI_DEFAULT_COMMAND": "make dev", "DEVSERVER_IMAGE": "dev:1",
		"K8S_PVC_SIZE": "1Gi", "K8S_PVC_ACCESS_MODE": "ReadWriteMany", "K8S_ENABLE_POD_AFFINITY": "false",
		"K8S_SNAPSHOT_READY_TIMEOUT_SECONDS": "12", "K8S_USE_S3_SNAPSHOTS": "true", "K8S_SWEEPER_SERVICE_ACCOUNT": "-",
		"K8S_NAMESPACE_PREFIX": "p-", "K8S_IMAGE_PULL_SECRET": "regcred", "K8S_IMAGE_PULL_POLICY": "Always",
		"K8S_INGRESS_ANNOTATIONS": "a.example.com/x=1, b=two", "K8S_ALLOW_ROOT_SERVICES": "true",
	} {
		t.Setenv(k, v)
	}
	cfg := defaultConfig()
	if err := cfg.fromEnv(); err != nil {
		t.Fatal(err)
	}
	if cfg.IdleTimeout != 45*time.Minute || cfg.StopIdleTimeout != 0 || cfg.UseWait != 7*time.Second ||
		cfg.DefaultCommand != "make dev" || !cfg.defaultCommandSet || !cfg.KubeArchives {
		t.Errorf("config %+v", cfg)
	}
	kc := kubernetesConfig(cfg)
	if kc.PVCSize != "1Gi" || kc.PVCAccessMode != "ReadWriteMany" || kc.PodAffinity || kc.SnapshotReadyTimeout != 12*time.Second ||
		kc.Sweeper != "" || kc.NamespacePrefix != "p-" || kc.Image != "dev:1" || kc.AppDomain != "localhost" {
		t.Errorf("kubernetes config %+v", kc)
	}
	if kc.ImagePullSecret != "regcred" || kc.ImagePullPolicy != "Always" || !kc.AllowRootServices ||
		len(kc.IngressAnnotations) != 2 || kc.IngressAnnotations["a.example.com/x"] != "1" || kc.IngressAnnotations["b"] != "two" {
		t.Errorf("kubernetes config of the issue 16 settings %+v", kc)
	}
	t.Setenv("K8S_INGRESS_ANNOTATIONS", `{"nginx.ingress.kubernetes.io/proxy-body-size": "64m"}`)
	js := defaultConfig()
	if err := js.fromEnv(); err != nil || js.Kube.IngressAnnotations["nginx.ingress.kubernetes.io/proxy-body-size"] != "64m" {
		t.Errorf("JSON annotations: %v %v", err, js.Kube.IngressAnnotations)
	}
	// Unset, the defaults: pod affinity on, the manifests' sweeper.
	def := kubernetesConfig(defaultConfig())
	if !def.PodAffinity || def.Sweeper != "sailtui-system/sailtui-sweeper" || def.Image != "tesslate-devserver:latest" {
		t.Errorf("default kubernetes config %+v", def)
	}
}

// The table is consistent: one row per variable, one setting per flag, and every flag it
// names is registered where the table says (the sweep ones by the sweep commands).
func TestConfigTableFlags(t *testing.T) {
	root := newRoot()
	seenEnv, seenFlag := map[string]bool{}, map[string]bool{}
	for _, s := range settings {
		if s.env == "" || s.meaning == "" || seenEnv[s.env] {
			t.Errorf("row %+v: empty or repeated variable, or no meaning", s)
		}
		seenEnv[s.env] = true
		f := s.flag
		if f == nil {
			continue
		}
		if seenFlag[f.name] {
			t.Errorf("flag --%s named by two settings", f.name)
		}
		seenFlag[f.name] = true
		var fs *pflag.FlagSet
		switch {
		case f.sweep:
			sweep, _, err := root.Find([]string{"sweep"})
			if err != nil {
				t.Fatal(err)
			}
			fs = sweep.Flags()
		case f.root:
			fs = root.LocalNonPersistentFlags()
		default:
			fs = root.PersistentFlags()
		}
		if fs.Lookup(f.name) == nil {
			t.Errorf("%s: flag --%s is not registered", s.env, f.name)
		}
	}
}

// SAILTUI_LOG_MAX_MIB reaches the runtime: a local container's kept log stays under it.
func TestLogMaxSetting(t *testing.T) {
	t.Setenv("SAILTUI_LOG_MAX_MIB", "0")
	c := newCLI(t)
	if r := c.run("config"); r.code == 0 {
		t.Errorf("SAILTUI_LOG_MAX_MIB=0 accepted: %+v", r)
	}
	t.Setenv("SAILTUI_LOG_MAX_MIB", "1")
	if out := c.ok("config"); !strings.Contains(out, "SAILTUI_LOG_MAX_MIB") {
		t.Fatalf("config does not show SAILTUI_LOG_MAX_MIB:\n%s", out)
	}
	c.ok("project", "create", "loud")
	// About 3 MiB of output, three times the cap.
	c.ok("container", "add", "loud", "spam", "--dir", ".", "--command",
		`i=0; while [ $i -lt 30000 ]; do printf '%05d %0100d\n' $i 0; i=$((i+1)); done; echo end; exec sleep 600`)
	c.ok("project", "start", "loud")
	for deadline := time.Now().Add(60 * time.Second); !strings.HasSuffix(c.ok("logs", "loud", "spam", "--tail", "1"), "end\n"); {
		if time.Now().After(deadline) {
			t.Fatalf("no end line: %q", c.ok("logs", "loud", "spam", "--tail", "1"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	files, _ := filepath.Glob(filepath.Join(c.state, "logs", "loud", "spam.log*"))
	var total int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			total += fi.Size()
		}
	}
	if total == 0 || total > 1<<20 {
		t.Errorf("kept log takes %d bytes (%v); the cap is 1 MiB", total, files)
	}
}
