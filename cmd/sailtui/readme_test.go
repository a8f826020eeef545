package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sailtui/sailtui/engine"
)

// readmeSection is the text of README.md from the heading title to the next heading of the
// same or a higher level.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+title+"\n")
	if i < 0 {
		t.Fatalf("README.md has no heading %q", title)
	}
	level := strings.Index(title, " ")
	rest := s[i+len(title)+2:]
	fenced, at := false, 0
	for line := range strings.SplitAfterSeq(rest, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if h := strings.Index(line, " "); !fenced && h > 0 && h <= level && strings.Trim(line[:h], "#") == "" {
			return rest[:at]
		}
		at += len(line)
	}
	return rest
}

// The README says what an operator of the kubernetes mode and its CronJobs meets (issue 20,
// item 18): its dev-server examples listen on $HOST (a server on 127.0.0.1 never passes the
// probes), the ConfigMap keys that must match the consoles' are real settings, how to run a
// sweep as the service account, and how many hibernation snapshots are kept.
func TestReadmeKubernetesAndHeadless(t *testing.T) {
	kube := readmeSection(t, "### Kubernetes")
	if !strings.Contains(kube, "$HOST:$PORT") {
		t.Error("the Kubernetes section does not say a dev server must listen on $HOST:$PORT")
	}
	devServer := regexp.MustCompile(`npm run dev|vite|next dev|uvicorn`)
	for _, m := range regexp.MustCompile(`--command '([^']*)'`).FindAllStringSubmatch(kube, -1) {
		cmd := m[1]
		if strings.Contains(cmd, "127.0.0.1") || strings.Contains(cmd, "localhost") ||
			(devServer.MatchString(cmd) && !strings.Contains(cmd, `"$HOST"`)) {
			t.Errorf("the Kubernetes example %q does not listen on $HOST: it would never pass the probes", cmd)
		}
	}

	head := readmeSection(t, "### Headless (CronJob)")
	known := map[string]bool{}
	for _, s := range settings {
		known[s.env] = true
	}
	i := strings.Index(head, "Keep these")
	if i < 0 {
		t.Fatal("the Headless section does not list the ConfigMap keys that must match the consoles'")
	}
	para := head[i:]
	para = para[:strings.Index(para, "\n\n")]
	keys := regexp.MustCompile("`([A-Z0-9_]+)`").FindAllStringSubmatch(para, -1)
	var listed []string
	for _, k := range keys {
		listed = append(listed, k[1])
		if !known[k[1]] {
			t.Errorf("the README lists %s among the keys to keep equal; sailtui has no such setting", k[1])
		}
	}
	// What a sweep re-applies when it puts a project back.
	for _, must := range []string{"DEVSERVER_IMAGE", "APP_DOMAIN", "K8S_INGRESS_CLASS", "K8S_WILDCARD_TLS_SECRET", "K8S_NAMESPACE_PREFIX", "K8S_SNAPSHOT_CLASS"} {
		if !slices.Contains(listed, must) {
			t.Errorf("the keys to keep equal lack %s", must)
		}
	}
	for _, want := range []string{
		"DATABASE_URL", "create job --from=cronjob/sailtui-hibernate", "create token sailtui-sweeper",
		fmt.Sprintf("keeps its %d newest ready hibernation snapshots", engine.DefaultKeepAuto),
		fmt.Sprintf("%d days later", int(engine.SnapshotRetention.Hours()/24)),
		fmt.Sprintf("at most %d per project", engine.MaxManualSnapshots),
	} {
		if !strings.Contains(head, want) {
			t.Errorf("the Headless section does not say %q", want)
		}
	}
}
