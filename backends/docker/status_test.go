package docker

import (
	"strings"
	"testing"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
	"github.com/sailtui/sailtui/engine"
)

// TestExitedStatus (issue 20, item 8): an exited container reports its exit code, also in the
// detail the console shows, and the port it was made to serve. Between the runs its restart
// policy makes (unless-stopped, issue 16) it is exited too, and the detail says it restarts.
func TestExitedStatus(t *testing.T) {
	t.Parallel()
	cli := dockertest.Client(t)
	r := newTestRuntime(t, testConfig(t, cli))
	pr := newProject(t, r, "exited")
	c := engine.Container{ProjectID: pr.p.ID, Name: "quits", Directory: "."}
	pr.cs = append(pr.cs, c)
	if _, err := r.StartContainer(t.Context(), pr.p, c, engine.StartSpec{Command: "exit 4", Port: 9000}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	var st engine.ContainerStatus
	waitFor(t, "the container to exit", func() bool {
		var err error
		st, err = r.ContainerStatus(t.Context(), pr.p, c)
		return err == nil && st.State == engine.ContainerExited
	})
	if st.ExitCode != 4 || !strings.HasPrefix(st.Detail, "exit 4") || st.Port != 9000 || st.HostPort != 0 {
		t.Errorf("exited status: %+v", st)
	}
}
