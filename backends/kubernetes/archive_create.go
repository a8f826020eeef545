package kubernetes

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sailtui/sailtui/engine"
	"github.com/sailtui/sailtui/engine/archive"
)

// Create implements engine.Volumes. `tar -c` runs in the file-manager pod; its output is read
// here entry by entry, normalised to archive.Write's form (exclusions applied, special files
// dropped, hard links stored as the files they name), compressed and stored through
// archive.Put, which hashes it on the way: memory stays bounded whatever the size of the
// project. A failed tar (a non-zero exit included), a failed compression or a failed Put
// leaves no object. Each service's data PVC is then archived the same way through a volume
// pod, as an object of its own (captureParts), with its owners.
func (a *ArchiveVolumes) Create(ctx context.Context, p engine.Project, snap engine.Snapshot) (engine.Snapshot, error) {
	ctx = bindProgress(ctx, p.ID, snap.Type.TakenBy())
	fail := func(err error) (engine.Snapshot, error) {
		return snap, fmt.Errorf("archive: create snapshot %s of project %s: %w", snap.ID, p.ID, err)
	}
	if _, err := a.Key(p.Owner, p.ID, snap.ID); err != nil {
		return fail(err) // before anything runs in the pod
	}
	ex, err := archive.NewExcluder(a.opts.Exclude)
	if err != nil {
		return fail(err)
	}
	// No storage is no snapshot (invariant 1): storage being deleted or a missing pod is an
	// error, never an empty archive. The file manager can outlive its namespace's deletion for
	// a while, serving a tree that is going.
	if ok, err := a.rt.ProjectExists(ctx, p); err != nil {
		return fail(err)
	} else if !ok {
		return fail(fmt.Errorf("the project's storage is gone or being deleted (hibernated?): %w", engine.ErrBadState))
	}
	pod, err := a.rt.fileManagerPod(ctx, p)
	if err != nil {
		return fail(err)
	}
	stored, err := a.capture(ctx, p, snap, a.fileManagerMount(pod), ex)
	if err != nil {
		return fail(err)
	}
	if stored, err = a.captureParts(ctx, p, stored, ex); err != nil {
		return fail(err)
	}
	return stored, nil
}

// capture stores the volume at mt as the object of snap.
func (a *ArchiveVolumes) capture(ctx context.Context, p engine.Project, snap engine.Snapshot, mt mount, ex archive.Excluder) (engine.Snapshot, error) {
	ns := a.rt.Namespace(p)
	// A restore interrupted in its swap has part of the tree in a sailtui directory, which
	// archives leave out: finish it first, so the snapshot holds the whole tree.
	if err := a.rt.volumeScript(ctx, ns, mt, "recover", ""); err != nil {
		return snap, err
	}
	progress := engine.ProgressFrom(ctx)
	return a.Put(ctx, p, snap, func(ctx context.Context, w io.Writer) (int64, error) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		tarR, tarW := io.Pipe()
		x := a.rt.startExec(cctx, ns, mt, []string{"tar", "-c", "-f", "-", "-C", mt.dir, "."}, nil, tarW,
			func(err error) { tarW.CloseWithError(err) })
		pk := &packer{ctx: cctx, a: a, ns: ns, mt: mt, m: ex, exec: x, progress: progress, p: p, op: snap.Type.TakenBy()}
		err := pk.pack(tarR, w)
		if err != nil {
			// Stop tar and unblock it, so that nothing still produces once this returns.
			cancel()
			tarR.CloseWithError(errors.New("archive abandoned"))
		}
		_ = x.wait()
		return pk.done, err
	})
}

// packer turns the pod's tar stream into an archive.
type packer struct {
	ctx      context.Context
	a        *ArchiveVolumes
	ns       string
	mt       mount
	m        archive.Excluder
	exec     *execResult
	progress engine.ProgressFunc
	p        engine.Project
	op       engine.OpKind
	done     int64
	reported int64
}

func (pk *packer) pack(src io.Reader, dst io.Writer) error {
	enc, err := zstd.NewWriter(dst,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithWindowSize(1<<20),
	)
	if err != nil {
		return err
	}
	err = pk.entries(tar.NewReader(src), tar.NewWriter(enc), src)
	if err != nil {
		// Drop what is buffered rather than finish the stream around a truncated tree.
		enc.Reset(io.Discard)
		_ = enc.Close()
		return err
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("compress: %w", err)
	}
	if pk.progress != nil {
		pk.progress(engine.Progress{ProjectID: pk.p.ID, Op: pk.op, Phase: "archive", Done: pk.done})
	}
	return nil
}

func (pk *packer) entries(tr *tar.Reader, tw *tar.Writer, src io.Reader) error {
	skip := "" // an excluded directory whose entries follow
	for {
		if err := pk.ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return pk.failure(src, fmt.Errorf("read tar from %s: %w", pk.mt.what, err))
		}
		name, err := archive.CleanName(hdr.Name)
		if err != nil {
			return fmt.Errorf("tar from %s: %q: %w", pk.mt.what, hdr.Name, err)
		}
		if skip != "" && strings.HasPrefix(name, skip+"/") {
			continue
		}
		skip = ""
		isDir := hdr.Typeflag == tar.TypeDir
		if name != "" && (reservedTopName(name) || pk.m.Excluded(name, isDir)) {
			if isDir {
				skip = name
			}
			continue
		}
		out := &tar.Header{Name: name, Mode: hdr.Mode & 0o7777, ModTime: hdr.ModTime.Truncate(time.Second), Format: tar.FormatGNU}
		if pk.mt.owners {
			out.Uid, out.Gid = hdr.Uid, hdr.Gid // numeric only, as archive.Write with Owners
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			out.Typeflag = tar.TypeDir
			out.Name = name + "/"
			if name == "" {
				out.Name = "./"
			}
			if err := tw.WriteHeader(out); err != nil {
				return err
			}
		case tar.TypeReg, '\x00':
			if name == "" {
				return fmt.Errorf("tar from %s: a file names the root: %w", pk.mt.what, engine.ErrBadInput)
			}
			out.Typeflag, out.Size = tar.TypeReg, hdr.Size
			if err := tw.WriteHeader(out); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, tr, hdr.Size); err != nil {
				return fmt.Errorf("%q: %w", name, err)
			}
			pk.count(hdr.Size)
		case tar.TypeSymlink:
			out.Typeflag, out.Linkname = tar.TypeSymlink, hdr.Linkname
			if err := tw.WriteHeader(out); err != nil {
				return err
			}
		case tar.TypeLink:
			if err := pk.hardLink(tw, out, hdr.Linkname); err != nil {
				return err
			}
		default:
			// Devices, fifos and anything else are not archived, as archive.Write does.
		}
	}
	// Read to the end: tar pads its output, and only the end of the stream says how tar ended.
	if _, err := io.Copy(io.Discard, src); err != nil {
		// The pipe ends with tar's own error when it failed.
		return pk.failure(src, fmt.Errorf("read tar from %s: %w", pk.mt.what, err))
	}
	if err := pk.exec.wait(); err != nil {
		return err
	}
	return tw.Close()
}

// failure is the error of a Create whose tar stream could not be read: tar's own, when it
// failed (it says why better than the stream it left), else err. A little more of the stream
// is read first so that a tar on its way out is not blocked on a full pipe; the caller then
// closes the pipe and cancels the exec.
func (pk *packer) failure(src io.Reader, err error) error {
	_, _ = io.CopyN(io.Discard, src, 1<<20)
	select {
	case <-pk.exec.done:
		if pk.exec.err != nil {
			return pk.exec.err
		}
	default:
	}
	return err
}

func (pk *packer) count(n int64) {
	pk.done += n
	if pk.progress != nil && pk.done-pk.reported >= 4<<20 {
		pk.reported = pk.done
		pk.progress(engine.Progress{ProjectID: pk.p.ID, Op: pk.op, Phase: "archive", Done: pk.done})
	}
}

// hardLink stores the entry out, a hard link to target, as a regular file with target's
// contents, read by a second exec (the pod's tar sent them once, with the first name).
func (pk *packer) hardLink(tw *tar.Writer, out *tar.Header, target string) error {
	rel, err := archive.CleanName(target)
	if err != nil || rel == "" {
		return fmt.Errorf("tar from %s: %q: hard link to %q: bad target", pk.mt.what, out.Name, target)
	}
	ctx, cancel := context.WithCancel(pk.ctx)
	defer cancel()
	r, w := io.Pipe()
	x := pk.a.rt.startExec(ctx, pk.ns, pk.mt, []string{"sh", "-c", hardLinkScript, "sh", pk.mt.dir, pk.mt.dir + "/" + rel}, nil, w,
		func(err error) { w.CloseWithError(err) })
	err = func() error {
		br := bufio.NewReader(r)
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("read %q: %w", rel, err)
		}
		size, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("read %q: bad size %q", rel, line)
		}
		out.Typeflag, out.Size = tar.TypeReg, size
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, br, size); err != nil {
			return fmt.Errorf("read %q: %w (changed while archived?)", rel, err)
		}
		if n, err := io.Copy(io.Discard, br); err != nil {
			return fmt.Errorf("read %q: %w", rel, err)
		} else if n > 0 {
			return fmt.Errorf("%q grew while it was archived", rel)
		}
		pk.count(size)
		return nil
	}()
	if err != nil {
		cancel()
		r.CloseWithError(err)
	}
	if xerr := x.wait(); xerr != nil && err == nil {
		err = fmt.Errorf("hard link %q to %q: %w", out.Name, rel, xerr)
	}
	return err
}
