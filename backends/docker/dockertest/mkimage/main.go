// Command mkimage builds the dev-server image docker mode runs by default (`make image`): the
// image the tests build, FROM scratch with a static sailtui (its devserver subcommand serves a
// directory), a static busybox with every applet (sh and the tools exec and the timeout kill
// need), and this machine's tmux and wget (an HTTP client that works, unlike busybox's), so
// nothing is pulled. It is tagged with --tag as well as with
// its content hash.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/backends/docker"
	"github.com/sailtui/sailtui/backends/docker/dockertest"
)

func main() {
	tag := flag.String("tag", docker.DefaultImage, "tag to give the image (what DEVSERVER_IMAGE names)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *tag); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, tag string) error {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	ref, err := dockertest.BuildImage(ctx, cli, dockertest.ImageSpec{
		Repo:    "sailtui-devserver",
		Sailtui: true,
		Tmux:    true,
		Wget:    true,
		Labels:  map[string]string{"org.opencontainers.image.title": "sailtui dev server"},
	})
	if err != nil {
		return fmt.Errorf("build the dev-server image: %w", err)
	}
	if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: ref, Target: tag}); err != nil {
		return fmt.Errorf("tag %s as %s: %w", ref, tag, err)
	}
	fmt.Printf("built %s, tagged %s: export DEVSERVER_IMAGE=%s\n", ref, tag, tag)
	return nil
}
