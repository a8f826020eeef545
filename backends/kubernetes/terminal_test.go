package kubernetes

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/containerexec"
)

// ttyHostExecutor runs a terminal exec as hostExecutor runs any (pipes stand in for the
// kubelet's terminal: the real one is in the node tests) and records the sizes the runtime's
// queue hands the stream.
type ttyHostExecutor struct {
	*hostExecutor
	mu    sync.Mutex
	sizes []remotecommand.TerminalSize
}

func (h *ttyHostExecutor) runTTY(ctx context.Context, ns, pod, container string, argv []string, stdin io.Reader, out io.Writer, sizes remotecommand.TerminalSizeQueue) (int, error) {
	// As the stream does: the sizes are read on a goroutine of their own until Next says done.
	go func() {
		for sz := sizes.Next(); sz != nil; sz = sizes.Next() {
			h.mu.Lock()
			h.sizes = append(h.sizes, *sz)
			h.mu.Unlock()
		}
	}()
	return h.run(ctx, ns, pod, container, argv, stdin, out, out)
}

func (h *ttyHostExecutor) seen() []remotecommand.TerminalSize {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]remotecommand.TerminalSize(nil), h.sizes...)
}

// A terminal exec runs through the same script as Exec (directory, environment, marker), sizes
// the terminal first and then as told, and kills what it started when its timeout ends it.
func TestExecTerminalThroughScript(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &ttyHostExecutor{hostExecutor: &hostExecutor{root: root}}
	r, p, c := fakeRuntime(t, h)
	resize := make(chan engine.TermSize, 1)
	var out bytes.Buffer
	in := strings.NewReader("typed\n")
	res, err := r.ExecTerminal(t.Context(), p, c,
		engine.ExecRequest{Argv: []string{"sh", "-c", `read -r line; echo "$line|$(pwd)|$GREETING"; sleep 0.3; exit 6`}, Env: map[string]string{"GREETING": "hi"}},
		engine.Terminal{In: in, Out: &out, Size: engine.TermSize{Cols: 120, Rows: 40}, Resize: resize})
	if err != nil || res.ExitCode != 6 {
		t.Fatalf("terminal exec: %+v %v, want exit code 6", res, err)
	}
	if want := "typed|" + filepath.Join(root, "app") + "|hi\n"; out.String() != want {
		t.Errorf("terminal output %q, want %q", out.String(), want)
	}
	if got := h.seen(); len(got) == 0 || got[0] != (remotecommand.TerminalSize{Width: 120, Height: 40}) {
		t.Errorf("sizes handed to the stream %v, want 120x40 first", got)
	}

	// A resize while it runs reaches the stream.
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = r.ExecTerminal(t.Context(), p, c, engine.ExecRequest{Argv: []string{"sleep", "2"}},
			engine.Terminal{Out: io.Discard, Resize: resize})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.seen()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	resize <- engine.TermSize{Cols: 90, Rows: 30}
	<-done
	got := h.seen()
	if err != nil || res.ExitCode != 0 || len(got) != 3 || got[1] != (remotecommand.TerminalSize{Width: 80, Height: 24}) || got[2] != (remotecommand.TerminalSize{Width: 90, Height: 30}) {
		t.Errorf("resized exec: %+v %v, sizes %v; want 80x24 then 90x30", res, err, got)
	}

	res, err = r.ExecTerminal(t.Context(), p, c, engine.ExecRequest{Argv: []string{"sleep", "30"}, Timeout: 300 * time.Millisecond}, engine.Terminal{Out: io.Discard})
	if err != nil || !res.TimedOut || res.ExitCode != engine.ExitTimedOut {
		t.Errorf("terminal exec past its timeout: %+v %v", res, err)
	}
	last := h.calls[len(h.calls)-1]
	if last[2] != containerexec.KillScript || !strings.HasPrefix(last[4], "SAILTUI_EXEC=") {
		t.Errorf("after a timeout the runtime ran %q, want the kill script with the marker", last)
	}
}

// An executor without terminals (a test's) is refused with what to do instead.
func TestExecTerminalNeedsTTYExecutor(t *testing.T) {
	r, p, c := fakeRuntime(t, &hostExecutor{root: t.TempDir()})
	_, err := r.ExecTerminal(t.Context(), p, c, engine.ExecRequest{Argv: []string{"sh"}}, engine.Terminal{Out: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "terminal") {
		t.Errorf("terminal exec without a terminal executor: %v", err)
	}
}
