// Command mkimage builds the dev-server image docker mode runs by default (`make image`): the
// image the tests build, FROM scratch with a static sailtui (its devserver subcommand serves a
// directory), a static busybox with every applet (sh and the tools exec and the timeout kill
// need), and this machine's tmux and wget (an HTTP client that works, unlike busybox's), so
// nothing is pulled. It is tagged with --tag as well as with
// its content hash.
//
// With --debian it builds the images made of Debian's packages instead (`make images`, issue
// 34): sailtui-postgres:15 (root-starting, like the official image), sailtui-postgres-nonroot:15
// (like bitnami's) and sailtui-app:latest (python3, psycopg2, node, tmux: the example project's
// DEVSERVER_IMAGE), each also tagged with its content key and rebuilt only when that changes.
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
	debian := flag.Bool("debian", false, "build the images made of Debian's packages (mmdebstrap) instead")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	do := func() error { return run(ctx, *tag) }
	if *debian {
		do = func() error { return runDebian(ctx) }
	}
	if err := do(); err != nil {
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

func runDebian(ctx context.Context) error {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	for _, img := range dockertest.DebianImages {
		start := time.Now()
		ref, err := dockertest.DebianImageFor(ctx, cli, img, os.Stderr)
		if err != nil {
			return err
		}
		ins, err := cli.ImageInspect(ctx, ref)
		if err != nil {
			return fmt.Errorf("inspect %s: %w", ref, err)
		}
		fmt.Printf("%s:%s = %s (%d MB, %s)\n", img.Repo, img.Tag, ref, ins.Size>>20, time.Since(start).Round(time.Second))
	}
	return nil
}
