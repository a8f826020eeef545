package dockertest

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// Proxy is a unix-socket proxy in front of the real Docker daemon: a runtime whose client
// talks to Proxy.Host loses its daemon connection when the test says so, without anything
// happening to the daemon itself (or to the other tests using it).
//
// Cut closes every proxied connection and refuses new ones (they are accepted and closed at
// once, so the client sees the daemon hang up) until Restore. CutOn arms a cut for the first
// request whose request line matches, which puts the cut in the middle of an operation that
// makes several Engine API calls.
type Proxy struct {
	t        testing.TB
	ln       net.Listener
	dir      string
	upstream [2]string // network, address of the real daemon

	mu       sync.Mutex
	conns    map[*proxyConn]struct{}
	down     bool
	requests []string
	armed    *cutRule
	cuts     int
	wg       sync.WaitGroup
}

type cutRule struct {
	match        *regexp.Regexp
	afterForward bool
	done         chan struct{}
}

type proxyConn struct {
	down, up net.Conn
	mu       sync.Mutex
	muted    bool // the daemon's answers are dropped: the request went through, its reply never comes back
}

// requestLine finds HTTP request lines in what a client writes. The Docker client writes a
// request's header in one piece, so a read holds whole request lines.
var requestLine = regexp.MustCompile(`(?m)^(GET|HEAD|POST|PUT|DELETE|PATCH) (\S+) HTTP/1\.[01]\r$`)

// StartProxy starts a proxy in front of the daemon cli talks to, which must be on a unix
// socket (the local daemon), and stops it when the test ends.
func StartProxy(t testing.TB, cli *client.Client) *Proxy {
	t.Helper()
	u, err := url.Parse(cli.DaemonHost())
	if err != nil || u.Scheme != "unix" {
		t.Fatalf("docker proxy: the daemon is at %q; the proxy fronts a unix socket (err %v)", cli.DaemonHost(), err)
	}
	// Not t.TempDir: a unix socket path must stay under ~104 bytes, and test names are long.
	dir, err := os.MkdirTemp("", "dproxy")
	if err != nil {
		t.Fatalf("docker proxy: %v", err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "docker.sock"))
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("docker proxy: %v", err)
	}
	p := &Proxy{t: t, ln: ln, dir: dir, upstream: [2]string{"unix", u.Path}, conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// Host is the proxy's address in DOCKER_HOST form.
func (p *Proxy) Host() string { return "unix://" + p.ln.Addr().String() }

// Client is a client of the daemon through the proxy (API version negotiated).
func (p *Proxy) Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.New(client.WithHost(p.Host()))
	if err != nil {
		t.Fatalf("docker proxy: client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Cut closes every proxied connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.down = true
	p.cuts++
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.down.Close()
		_ = c.up.Close()
	}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// Down reports whether the proxy is refusing connections.
func (p *Proxy) Down() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down
}

// CutOn arms a cut for the first request whose "METHOD PATH" matches pattern (a regexp; the
// path includes the API version prefix, e.g. "DELETE /v1.41/networks/abc"). With afterForward
// the request reaches the daemon, which acts on it, and its answer is dropped before the cut:
// the client cannot tell whether it happened. Otherwise the request never leaves the proxy.
// The channel is closed once the cut is done. A later CutOn replaces a rule that did not fire.
func (p *Proxy) CutOn(pattern string, afterForward bool) <-chan struct{} {
	r := &cutRule{match: regexp.MustCompile(pattern), afterForward: afterForward, done: make(chan struct{})}
	p.mu.Lock()
	p.armed = r
	p.mu.Unlock()
	return r.done
}

// Requests returns the request lines ("METHOD PATH") seen so far, in order.
func (p *Proxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refused := p.down
		p.mu.Unlock()
		if refused {
			_ = down.Close()
			continue
		}
		up, err := net.DialTimeout(p.upstream[0], p.upstream[1], 10*time.Second)
		if err != nil {
			p.t.Logf("docker proxy: dial the daemon: %v", err)
			_ = down.Close()
			continue
		}
		c := &proxyConn{down: down, up: up}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = down.Close()
			_ = up.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.clientToDaemon(c)
		go p.daemonToClient(c)
	}
}

func (p *Proxy) forget(c *proxyConn) {
	_ = c.down.Close()
	_ = c.up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) clientToDaemon(c *proxyConn) {
	defer p.wg.Done()
	defer p.forget(c)
	buf := make([]byte, 64<<10)
	for {
		n, err := c.down.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			rule := p.inspect(chunk)
			switch {
			case rule == nil:
			case rule.afterForward:
				c.mu.Lock()
				c.muted = true
				c.mu.Unlock()
				if _, werr := c.up.Write(chunk); werr != nil {
					p.fire(rule)
					return
				}
				// Let the daemon act on the request before it loses its client.
				time.Sleep(500 * time.Millisecond)
				p.fire(rule)
				return
			default:
				p.fire(rule)
				return
			}
			if _, werr := c.up.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) daemonToClient(c *proxyConn) {
	defer p.wg.Done()
	defer p.forget(c)
	buf := make([]byte, 64<<10)
	for {
		n, err := c.up.Read(buf)
		if n > 0 {
			c.mu.Lock()
			muted := c.muted
			c.mu.Unlock()
			if !muted {
				if _, werr := c.down.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// inspect records the request lines in chunk and returns the armed rule when one matches
// (disarming it).
func (p *Proxy) inspect(chunk []byte) *cutRule {
	lines := requestLine.FindAllSubmatch(chunk, -1)
	if len(lines) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var hit *cutRule
	for _, m := range lines {
		l := string(m[1]) + " " + string(m[2])
		p.requests = append(p.requests, l)
		if hit == nil && p.armed != nil && p.armed.match.MatchString(l) {
			hit, p.armed = p.armed, nil
		}
	}
	return hit
}

func (p *Proxy) fire(r *cutRule) {
	p.Cut()
	close(r.done)
}

// Cuts is how many times the proxy cut its connections.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Summary is the recent request lines, for a failure message.
func (p *Proxy) Summary(last int) string {
	rs := p.Requests()
	if len(rs) > last {
		rs = rs[len(rs)-last:]
	}
	return strings.Join(rs, "\n")
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
	_ = os.RemoveAll(p.dir)
}
