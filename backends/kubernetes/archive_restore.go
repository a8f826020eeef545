package kubernetes

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
	"github.com/sailtui/sailtui/engine/capped"
)

// Restore implements engine.Volumes. The project's storage and file manager are created when
// they are missing (a wake after hibernation deleted the namespace). The object is read and
// hashed here, decompressed, and checked entry by entry by archive.Filter, the reading
// archive.Extract uses (a hostile or corrupted archive is refused before anything reaches the pod); a
// clean tar made of the accepted entries goes to `tar -x` in the pod, into a fresh
// .sailtui-restore-<token> under the mount. Only once the whole object was read, tar
// succeeded and the SHA-256 matches is the tree swapped in (see swapScript); otherwise the
// extraction directory is removed and the mount is untouched.
func (a *ArchiveVolumes) Restore(ctx context.Context, p engine.Project, snap engine.Snapshot) error {
	ctx = bindProgress(ctx, p.ID, engine.OpRestore)
	fail := func(err error) error {
		return fmt.Errorf("archive: restore snapshot %s into project %s: %w", snap.ID, p.ID, err)
	}
	obj, err := a.Open(ctx, p, snap, a.opts.Limits)
	if err != nil {
		return fail(err)
	}
	defer obj.Close()
	pod, err := a.ensurePod(ctx, p)
	if err != nil {
		return fail(err)
	}
	ns := a.rt.Namespace(p)
	tok := restoreToken(snap.ID)
	if err := a.script(ctx, ns, pod, "prepare", tok); err != nil {
		return fail(err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = a.script(context.WithoutCancel(ctx), ns, pod, "abort", tok)
		}
	}()

	xctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inR, inW := io.Pipe()
	// Note: busybox tar creates symlinks with ".." or an absolute target only at the end of
	// the extraction, so the directories holding them get the time of the restore; GNU tar
	// restores every directory time.
	x := a.startExec(xctx, ns, pod, []string{"tar", "-x", "-p", "-f", "-", "-C", a.rt.cfg.MountPath + "/" + restoreDirPrefix + tok}, inR, io.Discard,
		func(err error) {
			if err == nil {
				err = errors.New("tar ended before its input")
			}
			inR.CloseWithError(err)
		})
	sent, ferr := filterArchive(ctx, obj.Src, inW, obj.Limits)
	if ferr != nil {
		inW.CloseWithError(ferr)
		cancel()
	} else {
		inW.Close()
	}
	xerr := x.wait()
	// The filter's refusal explains the tar's failure that follows from it, not the reverse.
	if err := obj.Verify(ctx, cmp.Or(ferr, xerr)); err != nil {
		return fail(err)
	}
	// An exec's stdin can end early with exit 0 (containerd cuts it when the remote closes an
	// output stream), and tar takes an end of input at an entry boundary for the end of the
	// archive: count what landed before anything is swapped in.
	if landed, err := a.countEntries(ctx, ns, pod, tok); err != nil {
		return fail(err)
	} else if landed < sent {
		// More is fine: tar makes the parents an archive from elsewhere may not list.
		return fail(fmt.Errorf("the file manager extracted %d of the archive's %d entries: the exec stream was cut short; the project is untouched, try again", landed, sent))
	}
	if err := a.script(ctx, ns, pod, "commit", tok); err != nil {
		return fail(err)
	}
	committed = true
	return nil
}

// filterArchive decompresses the zstd tar stream src and writes to dst a tar stream holding
// the same tree, or fails at the first entry archive.Filter refuses: the rules of
// archive.Extract, read once for both, with names tracked in memory (the tree is written by
// a tar in the pod, where nothing can be looked at first) and hard links to earlier files of
// the archive accepted. Symlinks may point anywhere, as in archive.Sandwich's restores:
// nothing is written through them and the tree is swapped in only after the checksum
// matched. Entries under sailtui's own restore directories are left out rather than let them
// pose as a leftover.
//
// Directories are written owner-writable first, so that a read-only one can be filled by a
// tar running as a non-root user, and named again at the end, deepest first, with their own
// modes and times (the tars of the pod then apply both).
//
// dst gets the tar end marker only when the whole stream, its zstd checksums and its end
// included, was accepted.
//
// lim are the restore's limits (archive.Reader's: links anywhere, snapshot windows).
func filterArchive(ctx context.Context, src io.Reader, dst io.Writer, lim archive.Limits) (entries int, err error) {
	rules := archive.Rules{Track: true, HardLinks: true, Skip: reservedTopName}
	tw := tar.NewWriter(dst)
	var dirs []*tar.Header
	err = archive.Filter(ctx, src, lim, rules, func(e archive.Entry, data io.Reader) error {
		out := &tar.Header{Name: e.Name, Mode: int64(e.Mode), ModTime: e.ModTime.Truncate(time.Second), Format: tar.FormatGNU}
		if e.Name != "" {
			entries++
		}
		switch e.Type {
		case tar.TypeDir:
			if e.Name == "" {
				return nil // the extraction directory itself
			}
			out.Typeflag, out.Name = tar.TypeDir, e.Name+"/"
			final := *out
			dirs = append(dirs, &final)
			out.Mode |= 0o700
			return tw.WriteHeader(out)
		case tar.TypeReg:
			out.Typeflag, out.Size = tar.TypeReg, e.Size
			if err := tw.WriteHeader(out); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, data, e.Size); err != nil {
				return fmt.Errorf("read archive: %w", err)
			}
			return nil
		case tar.TypeSymlink, tar.TypeLink:
			out.Typeflag, out.Linkname = e.Type, e.Linkname
			return tw.WriteHeader(out)
		}
		return fmt.Errorf("entry type %q not restored: %w", e.Type, engine.ErrBadPath)
	})
	if err != nil {
		return entries, err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := tw.WriteHeader(dirs[i]); err != nil {
			return entries, err
		}
	}
	return entries, tw.Close()
}

// countEntries counts the paths under the restore's extraction directory in the pod.
func (a *ArchiveVolumes) countEntries(ctx context.Context, ns, pod, tok string) (int, error) {
	var out bytes.Buffer
	var stderr capped.Buffer
	stderr.Max = 4096
	dir := a.rt.cfg.MountPath + "/" + restoreDirPrefix + tok
	code, err := a.rt.exec.run(ctx, ns, pod, FileManagerName, []string{"sh", "-c", `cd "$1" && find . -mindepth 1 | wc -l`, "sh", dir}, nil, &out, &stderr)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		return 0, fmt.Errorf("count the extracted entries in the file manager: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		return 0, fmt.Errorf("count the extracted entries in the file manager: %q: %w", out.String(), err)
	}
	return n, nil
}
