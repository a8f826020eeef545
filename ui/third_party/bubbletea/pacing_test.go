package tea

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// frameLog records when the renderer wrote to the terminal: each frame it draws is one write.
type frameLog struct {
	mu     sync.Mutex
	writes []time.Time
}

func (f *frameLog) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) > 0 {
		f.writes = append(f.writes, time.Now())
	}
	return len(p), nil
}

func (f *frameLog) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.writes)
}

// waitWrite waits for the write after the n-th and says when it came.
func (f *frameLog) waitWrite(t *testing.T, n int) time.Time {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		f.mu.Lock()
		if len(f.writes) > n {
			at := f.writes[n]
			f.mu.Unlock()
			return at
		}
		f.mu.Unlock()
	}
	t.Fatalf("no frame after the %d-th", n)
	return time.Time{}
}

type counterModel struct{ n int }

type bump struct{}

func (m counterModel) Init() Cmd { return nil }
func (m counterModel) Update(msg Msg) (Model, Cmd) {
	if _, ok := msg.(bump); ok {
		m.n++
	}
	return m, nil
}
func (m counterModel) View() View {
	v := NewView(fmt.Sprintf("n=%d;", m.n))
	v.AltScreen = true
	return v
}

// The renderer keeps no ticker (PATCH.md, 1): after a quiet stretch a frame is drawn as soon
// as it is asked for, not at the next tick; a burst is drawn at most fps frames a second.
func TestRendererPacing(t *testing.T) {
	const fps = 2 // a frame interval of 500 ms: far from any scheduling delay
	out := &frameLog{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewProgram(counterModel{}, WithContext(ctx), WithInput(nil), WithOutput(out),
		WithoutSignals(), WithFPS(fps), WithWindowSize(20, 2))
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	out.waitWrite(t, 0)

	// Quiet for two intervals, then one change: drawn at once, not up to 500 ms later.
	time.Sleep(time.Second)
	n := out.count()
	asked := time.Now()
	p.Send(bump{})
	if d := out.waitWrite(t, n).Sub(asked); d > 250*time.Millisecond {
		t.Errorf("a frame after a quiet stretch took %s to draw; the frame interval is 500ms", d)
	}

	// A burst of 40 changes over 1.2 s: at most one frame per interval, the last change
	// drawn within an interval.
	time.Sleep(time.Second)
	before := out.count()
	start := time.Now()
	for range 40 {
		p.Send(bump{})
		time.Sleep(30 * time.Millisecond)
	}
	last := time.Now()
	time.Sleep(2 * time.Second / fps)
	frames := out.count() - before
	// The renderer writes only the cells that changed, so the frame it drew last is read
	// from the renderer, not from the bytes.
	r := p.renderer.(*cursedRenderer)
	r.mu.Lock()
	drawn := r.lastView.Content
	r.mu.Unlock()
	if drawn != "n=41;" {
		t.Errorf("after the burst the screen shows %q; the last change is n=41;", drawn)
	}
	if allowed := int(last.Sub(start)/(time.Second/fps)) + 2; frames > allowed {
		t.Errorf("a burst of %s drew %d frames; at %d fps at most %d", last.Sub(start).Round(time.Millisecond), frames, fps, allowed)
	}
	if frames < 2 {
		t.Errorf("a burst of 1.2 s drew %d frames: it waited for the end", frames)
	}
	p.Quit()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
