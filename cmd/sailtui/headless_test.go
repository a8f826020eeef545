package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sailtui/sailtui/backends/s3/s3test"
	"github.com/sailtui/sailtui/engine"
)

// headlessSummary is the one JSON line a headless sweep prints.
type headlessSummary struct {
	Sweep      string             `json:"sweep"`
	Lock       string             `json:"lock"`
	Selected   int                `json:"selected"`
	Hibernated []engine.SweepItem `json:"hibernated"`
	Recovered  []engine.SweepItem `json:"recovered"`
	Skipped    []engine.SweepItem `json:"skipped"`
	Failed     []engine.SweepItem `json:"failed"`
	Deferred   []engine.SweepItem `json:"deferred"`
	DurationMS *int64             `json:"duration_ms"`
	Error      string             `json:"error"`
	Leftovers  *engine.Leftovers  `json:"leftovers"`
}

func summaries(t *testing.T, stdout string) []headlessSummary {
	t.Helper()
	var out []headlessSummary
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if l == "" {
			continue
		}
		var s headlessSummary
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("stdout line %q is not a JSON summary: %v", l, err)
		}
		out = append(out, s)
	}
	return out
}

// jsonLog parses stderr as slog JSON lines; anything else there fails the test.
func jsonLog(t testing.TB, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line %q is not a JSON log record: %v", l, err)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("log record %q has no %s", l, k)
			}
		}
		out = append(out, m)
	}
	return out
}

func logHas(recs []map[string]any, msg string, kv ...string) bool {
next:
	for _, r := range recs {
		if r["msg"] != msg {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if fmt.Sprint(r[kv[i]]) != kv[i+1] {
				continue next
			}
		}
		return true
	}
	return false
}

// A headless run where one project cannot be hibernated: exit status 1, stdout exactly one
// summary line that names the failed project with its reason (and the hibernated one), stderr
// only JSON log records, the failure among them.
func TestHeadlessFailureReported(t *testing.T) {
	c := newCLI(t)
	var good, bad jsonProject
	c.json(&good, "project", "create", "fine", "--owner", "tester")
	c.json(&bad, "project", "create", "doomed", "--owner", "tester")
	c.ok("files", "put", "doomed", "keep.txt")
	// Where doomed's archive would go is a file: its snapshot cannot be written.
	blocker := filepath.Join(c.state, "objects", "projects", "tester", bad.ID)
	must(t, os.MkdirAll(filepath.Dir(blocker), 0o755))
	must(t, os.WriteFile(blocker, []byte("in the way\n"), 0o644))

	r := c.run("--headless", "--sweep=hibernate", "--idle", "1ns")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (a project failed)\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	sums := summaries(t, r.stdout)
	if len(sums) != 1 {
		t.Fatalf("%d summary lines, want 1", len(sums))
	}
	s := sums[0]
	if s.Sweep != "hibernate" || s.Lock != "acquired" || s.Selected != 2 || s.DurationMS == nil || s.Skipped == nil || s.Deferred == nil {
		t.Fatalf("summary %+v", s)
	}
	if len(s.Hibernated) != 1 || s.Hibernated[0].Slug != "fine" {
		t.Errorf("hibernated %+v, want fine", s.Hibernated)
	}
	if len(s.Failed) != 1 || s.Failed[0].Slug != "doomed" || s.Failed[0].ID != bad.ID || s.Failed[0].Reason == "" {
		t.Errorf("failed %+v, want doomed with a reason", s.Failed)
	}
	recs := jsonLog(t, r.stderr)
	if !logHas(recs, "project failed", "project", "doomed", "level", "ERROR") || !logHas(recs, "sweep finished", "sweep", "hibernate", "failed", "1") {
		t.Errorf("the JSON log does not record the failure:\n%s", r.stderr)
	}
	// The failed project is as it was.
	if st := c.project("doomed").Status; st != "active" {
		t.Fatalf("doomed is %s after a failed hibernation", st)
	}
	c.ok("files", "get", "doomed", "keep.txt")
}

// idleStateDigest describes everything a sweep could change in a state directory: the stored
// projects, their snapshots and operations, the project trees and the archives.
func idleStateDigest(t *testing.T, c *cli) string {
	t.Helper()
	p := openTest(t, c.state, "inspector")
	defer p.close()
	ctx := context.Background()
	ps, err := p.store.ListProjects(ctx, engine.ProjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, pr := range ps {
		snaps, _ := p.store.ListSnapshots(ctx, engine.SnapshotFilter{ProjectID: pr.ID, IncludeDeleted: true})
		ops, _ := p.store.ListOps(ctx, pr.ID, 0)
		fmt.Fprintf(&b, "%s %s op=%q snapshots=%d ops=%d last=%s\n", pr.Slug, pr.Status, pr.OpID, len(snaps), len(ops), pr.LastActivity)
	}
	for _, dir := range []string{"projects", "objects"} {
		if _, err := os.Stat(filepath.Join(c.state, dir)); err == nil {
			fmt.Fprintf(&b, "%s: %v\n", dir, treeDigest(t, filepath.Join(c.state, dir)))
		}
	}
	return b.String()
}

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	must(t, l.Close())
	return port
}

// Bad configuration is found before anything is touched: a clear error, a non-zero exit, and
// the store, the project trees and the archives exactly as they were.
func TestHeadlessBadConfig(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "idle-one")
	c.ok("files", "put", "idle-one", "keep.txt")
	c.ok("project", "create", "idle-two")
	srv := s3test.Start(t)
	missing := "sailtui-missing-" + randSuffix(t)
	port := closedPort(t)
	s3env := []string{"S3_ENDPOINT_URL=" + srv.Endpoint, "S3_REGION=" + srv.Region,
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey}
	before := idleStateDigest(t, c)

	cases := []struct {
		refusal
		// jsonErr: the error is a JSON log record (a bad environment value is refused before
		// headless logging starts, as plain text).
		jsonErr bool
	}{
		{refusal{"idle minutes zero", []string{"K8S_HIBERNATION_IDLE_MINUTES=0"}, nil, 2, []string{"K8S_HIBERNATION_IDLE_MINUTES", "positive"}}, false},
		{refusal{"idle minutes negative", []string{"K8S_HIBERNATION_IDLE_MINUTES=-5"}, nil, 2, []string{"K8S_HIBERNATION_IDLE_MINUTES", "positive"}}, false},
		{refusal{"idle flag zero", nil, []string{"--idle", "0s"}, 2, []string{"--idle", "positive"}}, true},
		{refusal{"idle flag negative", nil, []string{"--idle=-1m"}, 2, []string{"--idle", "positive"}}, true},
		{refusal{"missing bucket", append([]string{"S3_BUCKET_NAME=" + missing}, s3env...), []string{"--idle", "1ns"}, 1, []string{missing}}, true},
		{refusal{"unreachable database", []string{fmt.Sprintf("DATABASE_URL=postgres://sailtui@127.0.0.1:%d/sailtui?sslmode=disable&connect_timeout=5", port)},
			[]string{"--idle", "1ns"}, 2, []string{fmt.Sprintf("127.0.0.1:%d", port), "DATABASE_URL"}}, true},
		{refusal{"prefix with ..", []string{"S3_PROJECTS_PREFIX=a/../b"}, []string{"--idle", "1ns"}, 2, []string{"S3_PROJECTS_PREFIX", "component"}}, true},
		// In a pod, a CronJob without DATABASE_URL would sweep a fresh, empty SQLite every time.
		{refusal{"in a pod without DATABASE_URL", []string{"DEPLOYMENT_MODE=kubernetes", "KUBECONFIG=", "KUBERNETES_SERVICE_HOST=127.0.0.1",
			"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(port)}, []string{"--idle", "1ns"}, 2, []string{"DATABASE_URL", "pod"}}, true},
		// A kubernetes setting is read with the others: refused before the cluster is looked for.
		{refusal{"kubernetes setting", []string{"DEPLOYMENT_MODE=kubernetes", "KUBECONFIG=" + filepath.Join(c.state, "no-kubeconfig"), "K8S_PVC_SIZE=big"},
			[]string{"--idle", "1ns"}, 2, []string{"K8S_PVC_SIZE", "5Gi"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := c.runIn(nil, tc.env, append([]string{"--headless", "--sweep=all"}, tc.args...)...)
			tc.check(t, r)
			if tc.jsonErr && !logHas(jsonLog(t, r.stderr), "sweep failed", "level", "ERROR") {
				t.Errorf("no JSON error record:\n%s", r.stderr)
			}
			// Refused or failed, the run prints its one summary line, with the error and the
			// exit status (issue 20, item 16).
			var line struct {
				Sweep string `json:"sweep"`
				Error string `json:"error"`
				Exit  int    `json:"exit"`
			}
			if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &line) != nil ||
				line.Error == "" || line.Exit != r.code || line.Sweep == "" {
				t.Errorf("want one JSON summary line with the error and exit %d, got: %q", r.code, r.stdout)
			}
			t.Logf("refused in %v", time.Since(start).Round(time.Millisecond))
			if after := idleStateDigest(t, c); after != before {
				t.Fatalf("a refused sweep changed the state:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// The missing bucket was not made on the way, and the real one holds nothing.
	if _, err := srv.Client().HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(missing)}); err == nil {
		t.Errorf("bucket %s exists after the refused sweep", missing)
	}
	if keys := bucketKeys(t, srv); len(keys) != 0 {
		t.Errorf("bucket %s holds %v", srv.Bucket, keys)
	}
	// And with the configuration fixed, the same sweep runs.
	r := c.runIn(nil, nil, "--headless", "--sweep=hibernate", "--idle", "1ns")
	if r.code != 0 || len(summaries(t, r.stdout)[0].Hibernated) != 2 {
		t.Fatalf("the sweep with a good configuration: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// writeWeightyTree gives a project enough files that archiving it takes a noticeable moment.
func writeWeightyTree(t *testing.T, dir string, i int) {
	t.Helper()
	for d := range 4 {
		sub := filepath.Join(dir, fmt.Sprintf("src/pkg%d", d))
		must(t, os.MkdirAll(sub, 0o755))
		for f := range 10 {
			b := make([]byte, 8<<10)
			_, _ = rand.Read(b)
			must(t, os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%02d.bin", f)), b, 0o644))
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "README.md"), fmt.Appendf(nil, "project %d\n", i), 0o644))
	must(t, os.Symlink("README.md", filepath.Join(dir, "LINK")))
}

// A headless sweep killed by SIGTERM mid-run (a CronJob deadline, a node drain) stops claiming,
// lets the projects in flight finish, prints its summary with the rest deferred, starts no
// further sweep and exits 0; the next run hibernates exactly the deferred ones. In the end every
// idle project went through exactly one hibernation with one snapshot, and wakes byte-identical.
func TestHeadlessSIGTERMResumes(t *testing.T) {
	c := newCLI(t)
	const n = 30
	setup := openTest(t, c.state, "setup")
	ctx := context.Background()
	ids := map[string]string{}
	digests := map[string]map[string]string{}
	for i := range n {
		p := newProject(t, setup.eng, fmt.Sprintf("idle%02d", i))
		dir := filepath.Join(c.state, "projects", p.Slug)
		writeWeightyTree(t, dir, i)
		ids[p.Slug] = p.ID
		digests[p.Slug] = treeDigest(t, dir)
	}

	cmd := exec.Command(os.Args[0], "--state-dir", c.state, "--headless", "--sweep=all", "--idle", "1ns", "--concurrency", "2")
	cmd.Env = append(os.Environ(), "SAILTUI_TEST_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	must(t, cmd.Start())
	// SIGTERM as soon as the first project is hibernated: the sweep is then mid-run.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ps, err := setup.store.ListProjects(ctx, engine.ProjectFilter{})
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, p := range ps {
			if p.Status == engine.StatusHibernated {
				done++
			}
		}
		if done > 0 {
			t.Logf("SIGTERM after %d of %d hibernated", done, n)
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no project hibernated within 2 minutes:\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("a sweep stopped by SIGTERM with nothing failed: %v, want exit 0\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	sums := summaries(t, stdout.String())
	if len(sums) != 1 || sums[0].Sweep != "hibernate" {
		t.Fatalf("summaries %+v: want only the hibernation sweep's (no purge after SIGTERM)", sums)
	}
	first := sums[0]
	if len(first.Failed) != 0 || len(first.Deferred) == 0 || len(first.Hibernated)+len(first.Deferred) != n {
		t.Fatalf("first run: %d hibernated, %d deferred, failed %+v; want all %d accounted for, some deferred",
			len(first.Hibernated), len(first.Deferred), first.Failed, n)
	}
	if !logHas(jsonLog(t, stderr.String()), "sweep not started: stopping", "sweep", "purge") {
		t.Errorf("the log does not say the purge was not started:\n%s", stderr.String())
	}
	// In-flight projects finished: nothing is left mid-operation.
	firstDone := map[string]bool{}
	for _, it := range first.Hibernated {
		firstDone[it.Slug] = true
	}
	ps, err := setup.store.ListProjects(ctx, engine.ProjectFilter{})
	must(t, err)
	for _, p := range ps {
		want := engine.StatusActive
		if firstDone[p.Slug] {
			want = engine.StatusHibernated
		}
		if p.Status != want || p.OpID != "" {
			t.Errorf("after SIGTERM %s is %s (op %q), want %s and no operation held", p.Slug, p.Status, p.OpID, want)
		}
	}

	r := c.run("--headless", "--sweep=hibernate", "--idle", "1ns")
	if r.code != 0 {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	second := summaries(t, r.stdout)[0]
	if len(second.Hibernated) != len(first.Deferred) || len(second.Recovered) != 0 || len(second.Failed) != 0 {
		t.Fatalf("second run hibernated %d (recovered %d, failed %d), want exactly the %d deferred",
			len(second.Hibernated), len(second.Recovered), len(second.Failed), len(first.Deferred))
	}
	for _, it := range second.Hibernated {
		if firstDone[it.Slug] {
			t.Errorf("%s hibernated by both runs", it.Slug)
		}
	}

	for slug, id := range ids {
		p, err := setup.store.GetProject(ctx, id)
		must(t, err)
		snaps, _ := setup.store.ListSnapshots(ctx, engine.SnapshotFilter{ProjectID: id, IncludeDeleted: true})
		ops, _ := setup.store.ListOps(ctx, id, 0)
		hib := 0
		for _, o := range ops {
			if o.Kind == engine.OpHibernate {
				hib++
				if o.State != engine.OpDone {
					t.Errorf("%s: hibernate operation %s", slug, o.State)
				}
			}
		}
		if p.Status != engine.StatusHibernated || len(snaps) != 1 || hib != 1 {
			t.Errorf("%s: %s, %d snapshots, %d hibernate operations; want hibernated exactly once", slug, p.Status, len(snaps), hib)
		}
	}
	for slug := range ids {
		if _, err := setup.eng.Wake(ctx, slug); err != nil {
			t.Fatalf("wake %s: %v", slug, err)
		}
		if d := diffDigests(digests[slug], treeDigest(t, filepath.Join(c.state, "projects", slug))); d != "" {
			t.Fatalf("%s differs after wake:\n%s", slug, d)
		}
	}
}

// A deadline (or SIGTERM) that ends the sweep before it claimed anything is a sweep told to
// stop, not a failure: exit 0, a summary per sweep saying the lock was not taken, nothing
// changed, and a warning in the JSON log.
func TestHeadlessStoppedBeforeStart(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "untouched")
	before := idleStateDigest(t, c)
	r := c.run("--headless", "--sweep=all", "--idle", "1ns", "--deadline", "1ns")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	sums := summaries(t, r.stdout)
	if len(sums) != 2 || sums[0].Lock != "not-taken (stopped)" || len(sums[0].Hibernated) != 0 || sums[0].Error != "" {
		t.Fatalf("summaries %+v", sums)
	}
	if !logHas(jsonLog(t, r.stderr), "sweep stopped early", "sweep", "hibernate", "level", "WARN") {
		t.Errorf("no warning in the log:\n%s", r.stderr)
	}
	if after := idleStateDigest(t, c); after != before {
		t.Fatalf("a sweep stopped before it started changed the state:\nbefore %s\nafter  %s", before, after)
	}
}

// A sweep killed with -9 in the middle of a hibernation must not hold the next sweep off for
// the lock's TTL: the next one takes the dead sweep's lock over at once, finishes the project
// it had claimed and reports the lock acquired.
func TestHeadlessSweepTakesOverDeadSweepLock(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "orphaned", "--owner", "tester")
	c.ok("files", "put", "orphaned", "keep.txt")
	c.crash("hibernate:snapshot-written", "--headless", "--sweep=hibernate", "--idle", "1ns")
	if p, _ := c.stored("orphaned"); p.Status != engine.StatusHibernating {
		t.Fatalf("after the killed sweep: %s, want hibernating (the test kills in the wrong place)", p.Status)
	}
	r := c.run("--headless", "--sweep=hibernate", "--idle", "1ns")
	if r.code != 0 {
		t.Fatalf("next sweep: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	sums := summaries(t, r.stdout)
	if len(sums) != 1 || sums[0].Lock != "acquired" {
		t.Fatalf("next sweep right after the killed one: %+v, want the lock acquired", sums)
	}
	if p, _ := c.stored("orphaned"); p.Status != engine.StatusHibernated || p.OpID != "" {
		t.Fatalf("after the next sweep: %+v, want hibernated and free", p)
	}
}

// Hibernations killed with -9 while their archive was being written leave temporary objects
// behind; the purge removes those whose writer is dead (on this host, at once), and only those.
func TestHeadlessPurgeRemovesLeftoversOfKilledWriters(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "bulky", "--owner", "tester")
	dir := filepath.Join(c.state, "projects", "bulky")
	big := make([]byte, 32<<20)
	_, _ = rand.Read(big)
	must(t, os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644))
	objects := filepath.Join(c.state, "objects")
	temps := func() []string {
		var out []string
		_ = filepath.WalkDir(objects, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), ".dirstore-tmp-") {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	const kills = 3
	for killed, tries := 0, 0; killed < kills; tries++ {
		if tries > 10 {
			t.Fatalf("only %d of %d hibernations could be killed while writing their archive", killed, kills)
		}
		cmd := exec.Command(os.Args[0], "--state-dir", c.state, "project", "hibernate", "bulky")
		cmd.Env = append(os.Environ(), "SAILTUI_TEST_MAIN=1")
		must(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		before := len(temps())
		writing := func() bool {
			ts := temps()
			if len(ts) == before {
				return false
			}
			fi, err := os.Stat(ts[len(ts)-1])
			return err == nil && fi.Size() > 0
		}
		caught := false
	watch:
		for start := time.Now(); ; time.Sleep(2 * time.Millisecond) {
			select {
			case <-exited:
				break watch // finished before the kill could land: try again
			default:
			}
			if writing() {
				caught = true
				break
			}
			if time.Since(start) > 30*time.Second {
				_ = cmd.Process.Kill()
				<-exited
				t.Fatal("no temporary archive appeared")
			}
		}
		_ = cmd.Process.Kill()
		<-exited
		if caught {
			killed++
		}
		// The next command finishes the interrupted hibernation (its holder is dead), or wakes
		// the one that finished.
		if r := c.run("project", "wake", "bulky"); r.code != 0 {
			t.Fatalf("wake after the kill: exit %d: %s", r.code, r.stderr)
		}
	}
	left := temps()
	if len(left) < kills {
		t.Fatalf("%d temporary archives after %d killed hibernations, want at least %d: %v", len(left), kills, kills, left)
	}
	// A live writer's temporary file is kept: this process is alive.
	live := filepath.Join(objects, ".dirstore-tmp-"+strings.ReplaceAll(engine.ProcessOwner(), "/", "~")+"-123")
	must(t, os.WriteFile(live, []byte("being written"), 0o644))

	r := c.run("--headless", "--sweep=purge")
	if r.code != 0 {
		t.Fatalf("purge: exit %d\n%s", r.code, r.stderr)
	}
	sums := summaries(t, r.stdout)
	if len(sums) != 1 || sums[0].Leftovers == nil || sums[0].Leftovers.Count != len(left) || sums[0].Leftovers.Bytes <= 0 {
		t.Fatalf("purge summary %+v (leftovers %+v), want %d leftovers removed: %v", sums, sums[0].Leftovers, len(left), left)
	}
	if got := temps(); len(got) != 1 || got[0] != live {
		t.Fatalf("after the purge: %v, want only the live writer's file", got)
	}
	if got := c.ok("files", "get", "bulky", "big.bin"); got != string(big) {
		t.Fatal("the project's file changed")
	}
}

// In kubernetes mode a sweep follows the sweeper's policy (kubernetes.Config.SweepOptions): a
// wake whose process died is reported as skipped, left for the next wake, which finishes it.
func TestHeadlessKubernetesLeavesInterruptedWake(t *testing.T) {
	t.Parallel()
	c, _ := kubeCLI(t)
	slug := "kube-left-" + randSuffix(t)
	c.ok("project", "create", slug, "--owner", "tester")
	c.ok("project", "hibernate", slug)
	c.crash("wake:claimed", "project", "wake", slug)

	r := c.run("--headless", "--sweep=hibernate")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (a project left for later is not a failure)\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	s := summaries(t, r.stdout)[0]
	if len(s.Skipped) != 1 || s.Skipped[0].Slug != slug || !strings.Contains(s.Skipped[0].Reason, "left for the next `sailtui project wake "+slug+"`") ||
		len(s.Recovered) != 0 || len(s.Failed) != 0 {
		t.Fatalf("summary %+v, want %s skipped and left for the next wake", s, slug)
	}
	c.ok("project", "wake", slug)
	if st := c.project(slug).Status; st != "active" {
		t.Fatalf("%s is %s after the wake, want active", slug, st)
	}
	c.ok("project", "rm", slug, "--yes")
}
