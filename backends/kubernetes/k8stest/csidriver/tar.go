package csidriver

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// A snapshot is GNU tar, not engine/archive: a CSI snapshot is a copy of the volume, whatever
// the pods put in it, where engine/archive is the project's archive format with its entry rules
// (device nodes and links out refused, expansion capped) and no sparse files, xattrs or ACLs.
// GNU tar keeps all of that (as upstream hostpath does with tar), and the node already needs
// it (make deps).

// tarDir writes the whole tree of dir (dir itself as ".") to the tar file out.
func tarDir(ctx context.Context, dir, out string) error {
	return runTar(ctx, "--create", "--file="+out, "--directory="+dir,
		"--sparse", "--xattrs", "--xattrs-include=*", "--acls", "--numeric-owner", "--one-file-system", ".")
}

// untar extracts the tar file in into dir (which exists), ownership and modes as recorded.
func untar(ctx context.Context, in, dir string) error {
	return runTar(ctx, "--extract", "--file="+in, "--directory="+dir,
		"--same-owner", "--same-permissions", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--acls")
}

func runTar(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "tar", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("tar %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
