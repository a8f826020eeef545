package portprobe

import (
	"net"
	"testing"
	"time"
)

// listen accepts connections on a free loopback port, handing each to serve.
func listen(t *testing.T, serve func(net.Conn)) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func TestAnswers(t *testing.T) {
	ctx := t.Context()
	// A server that waits for the client to speak (HTTP, PostgreSQL) answers.
	server := listen(t, func(c net.Conn) { time.Sleep(2 * time.Second); c.Close() })
	// A proxy with nothing behind it accepts and closes at once.
	proxy := listen(t, func(c net.Conn) { c.Close() })
	// A server that greets first (MySQL, SMTP) answers.
	greeter := listen(t, func(c net.Conn) { _, _ = c.Write([]byte("hello\n")); time.Sleep(time.Second); c.Close() })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close()

	for _, tc := range []struct {
		name string
		port int
		hold time.Duration
		want bool
	}{
		{"server", server, 0, true},
		{"server held", server, 200 * time.Millisecond, true},
		{"greeter held", greeter, 200 * time.Millisecond, true},
		{"proxy", proxy, 0, true},
		{"proxy held", proxy, 200 * time.Millisecond, false},
		{"nothing", closed, 0, false},
		{"nothing held", closed, 200 * time.Millisecond, false},
		{"no port", 0, 0, false},
	} {
		if got := Answers(ctx, "127.0.0.1", tc.port, tc.hold); got != tc.want {
			t.Errorf("%s: Answers = %v, want %v", tc.name, got, tc.want)
		}
	}
}
