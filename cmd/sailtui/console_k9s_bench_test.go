package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sailtui/sailtui/backends/kubernetes/k8stest"
)

// k9sBin is where `make k9s` installs the k9s the comparison runs (from cmd/sailtui, where go
// test runs).
const k9sBin = "../../.tools/bin/k9s"

// k9sRatioGoals are the console's goals against k9s at a fleet size (issue 19): k9s over
// sailtui, at least. Zero: no goal.
var k9sRatioGoals = map[int]struct{ rss, idleCPU float64 }{
	10_000: {rss: 4, idleCPU: 50},
}

// BenchmarkConsoleVsK9s runs k9s on its namespace view against a real control plane holding n
// namespaces, and sailtui's console over n projects, one after the other in the same run and
// measured the same way (measureTUI): time to the full list, RSS, idle CPU, key to frame. k9s
// is the reference console for a fleet on Kubernetes; the anchor is k9s at 10,005
// namespaces, first list 2.8 s, RSS 260 MB, idle CPU 15-16 % of a core.
func BenchmarkConsoleVsK9s(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Fatalf("tmux is needed (make deps installs it): %v", err)
	}
	k9s, err := filepath.Abs(k9sBin)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(k9s); err != nil {
		b.Fatalf("k9s is needed: make k9s builds it into .tools/bin: %v", err)
	}
	bin := filepath.Join(b.TempDir(), "sailtui")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build sailtui: %v: %s", err, out)
	}
	// One control plane for both sizes: the 10k run adds to the 1k run's namespaces.
	cl := k8stest.Start(b)
	cfg := cl.Config()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit: the creates are the API server's load
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	k9sHome := b.TempDir()
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			total := createNamespaces(b, client, n)
			for range b.N {
				benchConsoleVsK9s(b, bin, k9s, cl.Kubeconfig, k9sHome, n, total)
			}
		})
	}
}

// createNamespaces makes sure the cluster has namespaces fleet-000000 to fleet-<n-1>, 32
// creates at a time, each with its default service account: the controller manager would make
// those at its client's 20 requests a second, 8 minutes for 10k, which the consoles' figures
// would be taken under. It then checks that every namespace has one. It returns how many
// namespaces the cluster has in all (the system's too).
func createNamespaces(b *testing.B, client kubernetes.Interface, n int) int {
	ctx := b.Context()
	t0 := time.Now()
	var next atomic.Int64
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fleet-%06d", i)}}
				if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create namespace %s: %w", ns.Name, err)
					return
				}
				sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
				if _, err := client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create the default service account of %s: %w", ns.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatalf("list the namespaces: %v", err)
	}
	total := len(list.Items)
	created := time.Since(t0)
	for {
		sas, err := client.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=default"})
		if err != nil {
			b.Fatalf("list the default service accounts: %v", err)
		}
		if len(sas.Items) >= total {
			break
		}
		if time.Since(t0) > 5*time.Minute {
			b.Fatalf("the controller manager made %d default service accounts for %d namespaces in 5 min", len(sas.Items), total)
		}
		time.Sleep(time.Second)
	}
	fmt.Printf("k9s comparison: %d namespaces in the control plane (%d fleet ones created in %s, settled in %s)\n",
		total, n, created.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	return total
}

// k9sCmdline runs k9s on the namespace view, without its splash screen (the comparison is of
// the list, not of a logo held up for a while) and without its check for a newer release (a
// call to GitHub), with its configuration, logs and state under home rather than the user's.
func k9sCmdline(k9s, kubeconfig, home string) string {
	env := []string{"TERM=xterm-256color", "HOME=" + home, "K9S_CONFIG_DIR=" + filepath.Join(home, "k9s"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_CACHE_HOME=" + filepath.Join(home, "cache")}
	for i, e := range env {
		env[i] = shellQuote(e)
	}
	return "env " + strings.Join(env, " ") + " " + shellQuote(k9s) + " --kubeconfig " + shellQuote(kubeconfig) +
		" --command ns --splashless --readonly --logFile " + shellQuote(filepath.Join(home, "k9s.log"))
}

// k9sListed holds once k9s's namespace view counts all total namespaces in its title, with
// thousands separators and its row "all" counted too (" namespaces(all)[10,005] ").
func k9sListed(total int) func(string) bool {
	marker := "(all)[" + thousands(total+1) + "]"
	return func(scr string) bool { return strings.Contains(scr, marker) }
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func benchConsoleVsK9s(b *testing.B, bin, k9s, kubeconfig, home string, n, total int) {
	if err := os.MkdirAll(filepath.Join(home, "k9s"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "k9s", "config.yaml"), []byte("k9s:\n  skipLatestRevCheck: true\n"), 0o600); err != nil {
		b.Fatalf("write k9s's configuration: %v", err)
	}
	state := b.TempDir()
	seedSQLiteFleet(b, state, n)
	k := measureTUI(b, "k9s", k9sCmdline(k9s, kubeconfig, home), k9sListed(total))
	s := measureTUI(b, "the console", sailtuiCmdline(bin, state), sailtuiListed(n))

	// A process idle enough to use no clock tick (10 ms) in idleFor is counted as using one:
	// the ratio is then a floor.
	sIdle, floor := s.idle, ""
	if s.idleCPU == 0 {
		sIdle, floor = 100*float64(10*time.Millisecond)/float64(idleFor), "≥ "
	}
	g, rg := consoleFleetGoals[n], k9sRatioGoals[n]
	listX, rssX, idleX := float64(k.firstList)/float64(s.firstList), k.rss/s.rss, k.idle/sIdle
	b.ReportMetric(float64(s.firstList)/1e6, "first-list-ms")
	b.ReportMetric(float64(k.firstList)/1e6, "k9s-first-list-ms")
	b.ReportMetric(s.rss, "rss-MiB")
	b.ReportMetric(k.rss, "k9s-rss-MiB")
	b.ReportMetric(s.idle, "idle-cpu-%")
	b.ReportMetric(k.idle, "k9s-idle-cpu-%")
	b.ReportMetric(rssX, "k9s/sailtui-rss")
	b.ReportMetric(idleX, "k9s/sailtui-idle-cpu")
	fmt.Printf("console vs k9s, %d projects / %d namespaces (load %s):\n", n, total, loadAvg())
	fmt.Printf("  first full list from the exec: sailtui %d ms vs k9s %d ms (k9s/sailtui %.1f×; from tmux new-session %d vs %d ms; CPU to it %d vs %d ms; medians of 3 starts) %s\n",
		s.firstList.Milliseconds(), k.firstList.Milliseconds(), listX, s.fromTmux.Milliseconds(), k.fromTmux.Milliseconds(), s.firstCPU.Milliseconds(), k.firstCPU.Milliseconds(),
		goalText(s.firstList <= g.firstList, durGoal(g.firstList)))
	fmt.Printf("  RSS: sailtui %.1f MiB vs k9s %.1f MiB (k9s/sailtui %.1f×; peaks %.1f vs %.1f) %s %s\n",
		s.rss, k.rss, rssX, s.peak, k.peak, goalText(s.rss <= g.rssMiB, numGoal(g.rssMiB, "MiB")),
		goalText(rssX >= rg.rss, ratioGoal(rg.rss)))
	fmt.Printf("  idle CPU over %s: sailtui %.3f %% vs k9s %.2f %% of a core (k9s/sailtui %s%.0f×) %s %s\n",
		idleFor, s.idle, k.idle, floor, idleX, goalText(s.idle <= g.idleCPU, numGoal(g.idleCPU, "%")),
		goalText(idleX >= rg.idleCPU, ratioGoal(rg.idleCPU)))
	fmt.Printf("  key to frame (through tmux) p50: sailtui %.1f ms vs k9s %.1f ms (max %.1f vs %.1f)\n",
		float64(s.keyP50)/1e6, float64(k.keyP50)/1e6, float64(s.keyMax)/1e6, float64(k.keyMax)/1e6)
}

func ratioGoal(x float64) string {
	if x == 0 {
		return ""
	}
	return fmt.Sprintf("≥ %g× less than k9s", x)
}
