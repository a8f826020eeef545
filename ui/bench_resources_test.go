package ui

import (
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sailtui/sailtui/engine"
)

// BenchmarkConsoleContainersFrame: frames of the Containers pane of a project with 300 running
// containers, CPU and MEM shown; a refresh tick every 300 frames (a 5 s refresh at 60 frames
// a second). It reports the frame times and how often the figures were read: once at the
// opening and once per tick, never for a frame (issue 17, item 15).
func BenchmarkConsoleContainersFrame(b *testing.B) {
	for range b.N {
		ps := genProjects(10)
		ps[0].Status = engine.StatusActive
		src := newFakeSource(ps)
		src.usage = map[string]map[string]engine.ContainerUsage{}
		var cs []engine.ContainerView
		use := map[string]engine.ContainerUsage{}
		for i := range 300 {
			name := fmt.Sprintf("svc-%03d", i)
			cs = append(cs, engine.ContainerView{Container: engine.Container{Name: name, Directory: name, Port: 3000},
				Status: engine.ContainerStatus{State: engine.ContainerRunning, HostPort: 40000 + i, LocalURL: fmt.Sprintf("http://127.0.0.1:%d/", 40000+i), StartedAt: t0.Add(-time.Hour)}})
			use[name] = engine.ContainerUsage{CPU: float64(i%40) / 10, Memory: int64(i+1) << 22}
		}
		src.containers[ps[0].ID] = cs
		src.usage[ps[0].ID] = use
		m := benchModel(b, src)
		feed := func(cmd tea.Cmd) {
			for cmds := []tea.Cmd{cmd}; len(cmds) > 0; {
				var next []tea.Cmd
				for _, c := range cmds {
					for _, msg := range runNow(c) {
						_, more := m.Update(msg)
						next = append(next, more)
					}
				}
				cmds = next
			}
		}
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
		feed(m.reload())
		_, cmd := m.Update(keyPress("enter"))
		feed(cmd)
		opened := src.usageCalls.Load()
		keys := []string{"j", "j", "j", "pgdown", "k", "G", "g", "j"}
		const frames = 3000
		samples := make([]time.Duration, 0, frames)
		ticks := 0
		for i := range frames {
			var msg tea.Msg = keyPress(keys[i%len(keys)])
			if i%300 == 299 {
				msg, ticks = refreshTickMsg{}, ticks+1
			}
			start := time.Now()
			_, cmd := m.Update(msg)
			_ = m.View()
			samples = append(samples, time.Since(start))
			feed(cmd)
		}
		reads := src.usageCalls.Load()
		p50, p99 := pct(samples, 0.50), pct(samples, 0.99)
		b.ReportMetric(float64(p50)/1e6, "p50-ms")
		b.ReportMetric(float64(p99)/1e6, "p99-ms")
		b.ReportMetric(float64(reads-opened-int64(ticks)), "usage-reads-by-frames")
		fmt.Printf("frame, Containers with 300 containers and CPU/MEM (%d frames): p50 %s %s; p99 %s %s; usage read %d times at the opening, %d for %d refresh ticks, %d for frames\n",
			frames, ms(p50), verdict(p50 < goalFrameP50), ms(p99), verdict(p99 < goalFrameP99), opened, reads-opened, ticks, reads-opened-int64(ticks))
	}
}
