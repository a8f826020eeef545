package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sailtui/sailtui/engine"
)

// startWakerOn runs `sailtui waker` on the CLI's state, listening on listen, and returns its
// address.
func startWakerOn(t *testing.T, c *cli, listen, domain string, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--state-dir", c.state, "waker", "--listen", listen, "--domain", domain}, args...)...)
	cmd.Env = append(append(os.Environ(), "SAILTUI_TEST_MAIN=1"), c.env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`on http://(\S+)`)
		mre := regexp.MustCompile(`metrics at (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
			if m := mre.FindStringSubmatch(sc.Text()); m != nil {
				wakerMetrics.Store(m[1])
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("the waker never said where it serves")
	}
	return ""
}

// wakerMetrics is where the last waker started with --metrics-listen serves its metrics.
var wakerMetrics atomic.Value

type answer struct {
	status int
	retry  string
	body   string
}

func ask(t *testing.T, addr, host, method, accept string) answer {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
}

// Wake on request (issue 35, item 4), on the embedded default: a request for a hibernated
// project's host gets 503 with Retry-After and a page that reloads, 50 at once start one wake,
// a browser that follows the reloads gets the page that links the running app, and a host of
// no project or of a removed one gets the same 404.
func TestWakerWakesOnRequest(t *testing.T) {
	c := newCLI(t)
	c.ok("project", "create", "shop")
	c.ok("container", "add", "shop", "web", "--dir", ".", "--port", "8080", "--command", selfCommand())
	if r := c.runIn(strings.NewReader("the shop\n"), nil, "files", "put", "shop", "index.html"); r.code != 0 {
		t.Fatalf("files put: %s", r.stderr)
	}
	c.ok("project", "start", "shop")
	c.ok("project", "hibernate", "shop")
	c.ok("project", "create", "gone")
	c.ok("container", "add", "gone", "web", "--dir", ".", "--port", "8080", "--command", selfCommand())
	c.ok("project", "rm", "gone", "--yes")

	const domain = "apps.test"
	addr := startWakerOn(t, c, "127.0.0.1:0", domain, "--metrics-listen", "127.0.0.1:0")
	const browser = "text/html,application/xhtml+xml"

	var wg sync.WaitGroup
	answers := make([]answer, 50)
	for i := range answers {
		wg.Go(func() { answers[i] = ask(t, addr, "shop-web."+domain, http.MethodGet, browser) })
	}
	wg.Wait()
	for _, a := range answers {
		if a.status != http.StatusServiceUnavailable || a.retry == "" || !strings.Contains(a.body, "shop is waking up") || !strings.Contains(a.body, `http-equiv="refresh"`) {
			t.Fatalf("a request to the hibernated project: %+v", a)
		}
	}
	// A browser follows the refresh until the project answers.
	var up answer
	deadline := time.Now().Add(2 * time.Minute)
	for {
		up = ask(t, addr, "SHOP-WEB."+domain+":80", http.MethodGet, browser)
		if up.status == http.StatusOK || time.Now().After(deadline) {
			break
		}
		wait, _ := strconv.Atoi(up.retry)
		time.Sleep(time.Duration(min(max(wait, 1), 2)) * time.Second)
	}
	link := regexp.MustCompile(`href="([^"]+)"`).FindStringSubmatch(up.body)
	if up.status != http.StatusOK || link == nil {
		t.Fatalf("the woken project's page: %+v", up)
	}
	resp, err := http.Get(link[1])
	if err != nil {
		t.Fatalf("the linked app %s: %v", link[1], err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "the shop") {
		t.Fatalf("the linked app %s answered %q", link[1], b)
	}

	var lines []engine.HistoryEntry
	c.json(&lines, "project", "history", "shop")
	wakes, viaHTTP := 0, 0
	for _, l := range lines {
		if l.Kind == engine.HistoryOperation && l.Op == engine.OpWake {
			wakes++
		}
		if l.Kind == engine.HistoryActivity && l.Source == engine.SourceHTTP {
			viaHTTP++
		}
	}
	if wakes != 1 || viaHTTP != 1 {
		t.Fatalf("history after 50 requests: %d wakes, %d http activity lines; want 1 and 1: %+v", wakes, viaHTTP, lines)
	}

	// The wake is in the histogram, by the path the project came back by.
	murl, _ := wakerMetrics.Load().(string)
	if murl == "" {
		t.Fatal("the waker did not say where its metrics are")
	}
	mresp, err := http.Get(murl)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(mb), `sailtui_wake_seconds_count{path="archive"} 1`) {
		t.Fatalf("the waker's metrics do not count the wake:\n%s", mb)
	}

	// Nothing tells a removed project, an unknown one or a malformed host apart.
	neutral := ask(t, addr, "nobody-web."+domain, http.MethodGet, browser)
	for _, host := range []string{"gone-web." + domain, "shop-web.elsewhere.test", "shop-api." + domain, "-." + domain, strings.Repeat("a", 300) + "." + domain, ""} {
		if a := ask(t, addr, host, http.MethodGet, ""); a.status != http.StatusNotFound || a.body != neutral.body {
			t.Errorf("host %q: %+v; want the neutral 404 %q", host, a, neutral.body)
		}
	}
	if neutral.status != http.StatusNotFound {
		t.Errorf("unknown host: %+v", neutral)
	}
	if a := ask(t, addr, "shop-web."+domain, http.MethodPost, ""); a.status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %+v", a)
	}
}
