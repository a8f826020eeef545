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
// they are missing (a wake after hibernation deleted the namespace), and so is each service's
// data PVC, with a volume pod to reach it (restoreMounts). Each object is read and hashed
// here, decompressed, and checked entry by entry by archive.Filter, the reading
// archive.Extract uses (a hostile or corrupted archive is refused before anything reaches a
// pod); a clean tar made of the accepted entries goes to `tar -x` in the pod, into a fresh
// .sailtui-restore-<token> under the mount. Only once every volume's object was read whole,
// its tar succeeded and its SHA-256 matched is any tree swapped in (see swapScript): a
// snapshot is restored whole or not at all, and a failure leaves every mount untouched.
func (a *ArchiveVolumes) Restore(ctx context.Context, p engine.Project, snap engine.Snapshot) error {
	ctx = bindProgress(ctx, p.ID, engine.OpRestore)
	fail := func(err error) error {
		return fmt.Errorf("archive: restore snapshot %s into project %s: %w", snap.ID, p.ID, err)
	}
	// The object is there and readable before anything is made in the cluster.
	obj, err := a.Open(ctx, p, snap, a.opts.Limits)
	if err != nil {
		return fail(err)
	}
	pod, err := a.ensurePod(ctx, p)
	if err != nil {
		obj.Close()
		return fail(err)
	}
	targets := []*staged{{mt: a.fileManagerMount(pod), snap: snap, obj: obj}}
	parts, release, err := a.restoreMounts(ctx, p, snap)
	defer release()
	if err != nil {
		obj.Close()
		return fail(err)
	}
	targets = append(targets, parts...)
	ns := a.rt.Namespace(p)
	defer func() {
		for _, t := range targets {
			if t.obj != nil {
				t.obj.Close()
			}
			if t.prepared && !t.committed {
				_ = a.rt.volumeScript(context.WithoutCancel(ctx), ns, t.mt, "abort", restoreToken(snap.ID))
			}
		}
	}()
	for _, t := range targets {
		if err := a.stage(ctx, p, ns, t, restoreToken(snap.ID)); err != nil {
			if t.part != "" {
				err = fmt.Errorf("service volume %s: %w", t.part, err)
			}
			return fail(err)
		}
	}
	// The extraction may have taken long enough for the operation to be taken over (a paused
	// process): the swap is made only while it still holds the project.
	if err := engine.CheckHold(ctx, "swap the restored trees in"); err != nil {
		return fail(err)
	}
	for _, t := range targets {
		if err := a.commit(ctx, ns, t, restoreToken(snap.ID)); err != nil {
			if t.part != "" {
				err = fmt.Errorf("service volume %s: %w", t.part, err)
			}
			return fail(err)
		}
	}
	return nil
}

// staged is one volume of a restore: where it goes, what goes there, and how far it got.
type staged struct {
	mt   mount
	snap engine.Snapshot
	part string // the service, for a service's volume
	obj  *archive.Reader
	// root is the archive's entry for the volume's top directory: the mount itself, which a
	// swap cannot replace, gets its mode (and owners) after the commit.
	root                *archive.Entry
	prepared, committed bool
}

// stage extracts t's object into the extraction directory of its mount and proves it whole:
// read to its end, checksum matched, every entry landed.
func (a *ArchiveVolumes) stage(ctx context.Context, p engine.Project, ns string, t *staged, tok string) error {
	if t.obj == nil {
		lim := a.opts.Limits
		lim.Owners = t.mt.owners
		obj, err := a.Open(ctx, p, t.snap, lim)
		if err != nil {
			return err
		}
		t.obj = obj
	}
	if err := a.rt.volumeScript(ctx, ns, t.mt, "prepare", tok); err != nil {
		return err
	}
	t.prepared = true
	xctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inR, inW := io.Pipe()
	// Note: busybox tar creates symlinks with ".." or an absolute target only at the end of
	// the extraction, so the directories holding them get the time of the restore; GNU tar
	// restores every directory time.
	x := a.rt.startExec(xctx, ns, t.mt, []string{"tar", "-x", "-p", "-f", "-", "-C", t.mt.dir + "/" + restoreDirPrefix + tok}, inR, io.Discard,
		func(err error) {
			if err == nil {
				err = errors.New("tar ended before its input")
			}
			inR.CloseWithError(err)
		})
	sent, root, ferr := filterArchive(ctx, t.obj.Src, inW, t.obj.Limits)
	if ferr != nil {
		inW.CloseWithError(ferr)
		cancel()
	} else {
		inW.Close()
	}
	xerr := x.wait()
	// The filter's refusal explains the tar's failure that follows from it, not the reverse.
	if err := t.obj.Verify(ctx, cmp.Or(ferr, xerr)); err != nil {
		return err
	}
	t.root = root
	// An exec's stdin can end early with exit 0 (containerd cuts it when the remote closes an
	// output stream), and tar takes an end of input at an entry boundary for the end of the
	// archive: count what landed before anything is swapped in.
	if landed, err := a.rt.countEntries(ctx, ns, t.mt, tok); err != nil {
		return err
	} else if landed < sent {
		// More is fine: tar makes the parents an archive from elsewhere may not list.
		return fmt.Errorf("%s extracted %d of the archive's %d entries: the exec stream was cut short; the project is untouched, try again", t.mt.what, landed, sent)
	}
	return nil
}

// commit swaps t's verified tree in. A service's volume pod running as root (see
// archive_parts.go) then gives the mount the mode and owner its archive recorded: a database
// refuses a data directory of another user's, and the swap moves only what is inside it.
func (a *ArchiveVolumes) commit(ctx context.Context, ns string, t *staged, tok string) error {
	if err := a.rt.volumeScript(ctx, ns, t.mt, "commit", tok); err != nil {
		return err
	}
	t.committed = true
	if t.part == "" || t.root == nil || !t.mt.owners || !a.rt.cfg.AllowRootServices {
		return nil
	}
	argv := []string{"sh", "-c", `chmod "$2" "$1" && chown "$3" "$1"`, "sh", t.mt.dir,
		strconv.FormatUint(uint64(t.root.Mode.Perm()), 8), strconv.Itoa(t.root.Uid) + ":" + strconv.Itoa(t.root.Gid)}
	var stderr capped.Buffer
	stderr.Max = 4096
	code, err := a.rt.exec.run(ctx, ns, t.mt.pod, t.mt.container, argv, nil, io.Discard, &stderr)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		return fmt.Errorf("give %s its mode and owner in %s: %w", t.mt.dir, t.mt.what, err)
	}
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
//
// root is the archive's entry for the top directory, nil when it has none.
func filterArchive(ctx context.Context, src io.Reader, dst io.Writer, lim archive.Limits) (entries int, root *archive.Entry, err error) {
	rules := archive.Rules{Track: true, HardLinks: true, Skip: reservedTopName}
	tw := tar.NewWriter(dst)
	var dirs []*tar.Header
	err = archive.Filter(ctx, src, lim, rules, func(e archive.Entry, data io.Reader) error {
		out := &tar.Header{Name: e.Name, Mode: int64(e.Mode), ModTime: e.ModTime.Truncate(time.Second), Format: tar.FormatGNU}
		if lim.Owners {
			// Checked by the filter; applied by a tar running as root (a service's volume).
			out.Uid, out.Gid = e.Uid, e.Gid
		}
		if e.Name != "" {
			entries++
		}
		switch e.Type {
		case tar.TypeDir:
			if e.Name == "" {
				top := e
				root = &top
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
		case tar.TypeSymlink, tar.TypeLink, tar.TypeFifo:
			out.Typeflag, out.Linkname = e.Type, e.Linkname
			return tw.WriteHeader(out)
		}
		return fmt.Errorf("entry type %q not restored: %w", e.Type, engine.ErrBadPath)
	})
	if err != nil {
		return entries, nil, err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := tw.WriteHeader(dirs[i]); err != nil {
			return entries, nil, err
		}
	}
	return entries, root, tw.Close()
}

// countEntries counts the paths under the restore's extraction directory in the pod.
func (r *Runtime) countEntries(ctx context.Context, ns string, mt mount, tok string) (int, error) {
	var out bytes.Buffer
	var stderr capped.Buffer
	stderr.Max = 4096
	dir := mt.dir + "/" + restoreDirPrefix + tok
	code, err := r.exec.run(ctx, ns, mt.pod, mt.container, []string{"sh", "-c", `cd "$1" && find . -mindepth 1 | wc -l`, "sh", dir}, nil, &out, &stderr)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		return 0, fmt.Errorf("count the extracted entries in %s: %w", mt.what, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		return 0, fmt.Errorf("count the extracted entries in %s: %q: %w", mt.what, out.String(), err)
	}
	return n, nil
}
