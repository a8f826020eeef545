package kubernetes

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/capped"
)

var _ engine.TreeImporter = (*Runtime)(nil)

// receiveScript stores its stdin in the file $1 and answers with the bytes and the SHA-256 it
// received, as fileScript's write does: an exec's stdin can end early with exit 0 (the
// containerd bug WriteFile describes), and only the answer tells.
const receiveScript = `f="$1"; cat > "$f" || { rm -f "$f"; exit 1; }
n=$(wc -c < "$f") && s=$(sha256sum < "$f") || { rm -f "$f"; exit 1; }
printf '%s %s\n' $n ${s%% *}`

// ImportTree implements engine.TreeImporter (project create --from) through the file-manager
// pod. The directory is read here as the local import reads it (archive.Write, the operator's
// links as they are) and checked entry by entry by archive.Filter with the local import's
// limits, so the same trees are refused for the same reasons. The clean tar that results is
// received whole into the mount beside an extraction directory, proven by its size and
// SHA-256, extracted there, counted, and only then swapped in with the restore's swap: a
// create whose import fails leaves no partial tree behind to start over (and undoCreate
// removes the namespace anyway).
func (r *Runtime) ImportTree(ctx context.Context, p engine.Project, src string) error {
	fail := func(err error) error { return fmt.Errorf("import %s: %w", src, err) }
	pod, err := r.fileManagerPod(ctx, p)
	if err != nil {
		return fail(err)
	}
	ns := r.Namespace(p)
	mt := mount{pod: pod, container: FileManagerName, dir: r.cfg.MountPath, what: "the file manager"}
	tok := "import-" + strings.ToLower(rand.Text()[:16])
	if err := r.volumeScript(ctx, ns, mt, "prepare", tok); err != nil {
		return fail(err)
	}
	tarFile := mt.dir + "/" + restoreDirPrefix + tok + ".tar"
	committed := false
	defer func() {
		if committed {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = r.volumeScript(actx, ns, mt, "abort", tok)
		_, _ = r.podSh(actx, ns, mt, nil, `rm -f "$1"`, tarFile)
	}()

	// archive.Write → filter → the pod, each step a pipe, so the tree is read once and never
	// held in memory.
	archR, archW := io.Pipe()
	werr := make(chan error, 1)
	go func() {
		_, err := archive.Write(ctx, src, archW, archive.WriteOptions{Exclude: []string{}, AnyLinkTarget: true})
		archW.CloseWithError(err)
		werr <- err
	}()
	tarR, tarW := io.Pipe()
	type filtered struct {
		entries int
		err     error
	}
	ferr := make(chan filtered, 1)
	go func() {
		n, _, err := filterArchive(ctx, archR, tarW, archive.Limits{AnyLinkTarget: true})
		archR.CloseWithError(err)
		tarW.CloseWithError(err)
		ferr <- filtered{n, err}
	}()
	sent := &hashingReader{r: tarR, h: sha256.New()}
	got, rerr := r.podSh(ctx, ns, mt, sent, receiveScript, tarFile)
	tarR.CloseWithError(io.ErrClosedPipe) // unblocks the filter when the pod stopped reading
	f := <-ferr
	readErr := <-werr
	// The first cause wins: a pod that stopped reading closes the pipes behind it.
	cut := func(err error) bool { return err != nil && !errors.Is(err, io.ErrClosedPipe) }
	switch {
	case cut(readErr):
		return fail(fmt.Errorf("read: %w", readErr))
	case cut(f.err):
		return fail(f.err)
	case rerr != nil:
		return fail(fmt.Errorf("send the tree to %s: %w", mt.what, rerr))
	case readErr != nil || f.err != nil || sent.err != nil:
		return fail(fmt.Errorf("send the tree to %s: %w", mt.what, cmp.Or(readErr, f.err, sent.err)))
	}
	if want := fmt.Sprintf("%d %x", sent.n, sent.h.Sum(nil)); strings.TrimSpace(got) != want {
		return fail(fmt.Errorf("the file manager received %q (bytes, sha256), %q was sent: the exec stream was cut short; nothing was imported, try again",
			strings.TrimSpace(got), want))
	}
	if _, err := r.podSh(ctx, ns, mt, nil, `tar -x -p -f "$1" -C "$2" && rm -f "$1"`, tarFile, mt.dir+"/"+restoreDirPrefix+tok); err != nil {
		return fail(fmt.Errorf("extract in %s: %w", mt.what, err))
	}
	if landed, err := r.countEntries(ctx, ns, mt, tok); err != nil {
		return fail(err)
	} else if landed < f.entries {
		return fail(fmt.Errorf("%s extracted %d of the tree's %d entries; nothing was imported, try again", mt.what, landed, f.entries))
	}
	if err := r.volumeScript(ctx, ns, mt, "commit", tok); err != nil {
		return fail(err)
	}
	committed = true
	return nil
}

// podSh runs the shell script with args ($1...) and stdin (nil for none) in m's pod and
// returns its stdout (the first 64 KiB); a non-zero exit is an error carrying its stderr.
func (r *Runtime) podSh(ctx context.Context, ns string, m mount, stdin io.Reader, script string, args ...string) (string, error) {
	var out, stderr capped.Buffer
	out.Max, stderr.Max = 64<<10, 4096
	argv := append([]string{"sh", "-c", script, "sh"}, args...)
	code, err := r.exec.run(ctx, ns, m.pod, m.container, argv, stdin, &out, &stderr)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	return out.String(), err
}
