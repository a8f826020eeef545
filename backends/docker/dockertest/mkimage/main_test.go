package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

// TestMakeImage (issue 20, item 6): what `make image` builds is tagged as asked and holds what
// the README promises: sh, the busybox tools, tmux and sailtui's devserver.
func TestMakeImage(t *testing.T) {
	cli := dockertest.Client(t)
	tok := dockertest.Token(t, cli)
	tag := "sailtui-mkimage-test:" + tok
	ctx := t.Context()
	if err := run(ctx, tag); err != nil {
		t.Fatalf("mkimage: %v", err)
	}
	t.Cleanup(func() {
		// Only the tag: the image itself is shared with every later `make image`.
		_, _ = cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{})
	})
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: tag, User: "1000:1000", Labels: map[string]string{dockertest.Label: tok},
			Entrypoint: []string{"sh", "-c", "tmux -V && sailtui devserver --help >/dev/null && echo devserver ok && grep -c . /etc/passwd"}},
	})
	if err != nil {
		t.Fatalf("create a container of %s: %v", tag, err)
	}
	if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w := cli.ContainerWait(wctx, res.ID, client.ContainerWaitOptions{})
	var code int64
	select {
	case r := <-w.Result:
		code = r.StatusCode
	case err := <-w.Error:
		t.Fatalf("wait: %v", err)
	}
	logs, err := cli.ContainerLogs(ctx, res.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, logs)
	_ = logs.Close()
	if code != 0 || !strings.Contains(out.String(), "tmux ") || !strings.Contains(out.String(), "devserver ok") {
		t.Fatalf("the image lacks what it promises: exit %d\n%s", code, out.String())
	}
}
