package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/engine"
)

// Named volumes (Config.Volumes, USE_DOCKER_VOLUMES=true).
//
// Each project has one volume, <prefix>-<slug>, of the local driver with no options, labelled
// like the project's network (sailtui and compose project labels, so `docker compose -p <slug>`
// and a label filter find it) and mounted at /app in every container of the project, with
// nocopy: the image's own /app never leaks into it.
//
// The engine needs the project's files as a directory of this machine: file operations are
// confined with engine/hostfs, and the archive sandwich reads and restores StorageDir. With a
// volume that directory is the volume's Mountpoint (<docker root>/volumes/<name>/_data), which is
// a plain directory of the Docker host for a local volume without options. So volume mode needs
// this process ON THE DOCKER HOST, with access to the Docker root directory (as root, normally);
// every operation on the files of a volume whose Mountpoint is not a directory here fails with an
// error saying so (volumeDirErr), and StorageDir is then "", which the sandwich refuses, so a
// snapshot or restore never works on some other directory of this machine that merely has the
// same path.
//
// Restores: the sandwich extracts the archive into a fresh sibling of _data, inside the
// volume's own directory <docker root>/volumes/<name>/ (same filesystem), checks the archive's
// SHA-256, and only then exchanges the two directories with one atomic rename (renameat2
// RENAME_EXCHANGE; a rename pair where that is missing), and removes the old tree. So the old
// contents are replaced only once the snapshot was read completely and verified (invariant 1),
// and _data never stops existing. This is safe for a local volume without options: the daemon
// keeps no handle on _data (it resolves the path each time a container using the volume is
// created), and the project has no container while its storage is restored (the engine stops
// them first; the runtime creates containers afresh at every start), so the next container
// mounts the restored tree. A sibling left by a killed restore is removed by the next restore,
// and in any case with the volume (the daemon removes the volume's whole directory).

// volumeNameRE is what the engine accepts as a volume name.
var volumeNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// composeVolumeKey is the project volume's key in the compose file.
const composeVolumeKey = "app"

// storageDirTimeout bounds the engine call StorageDir makes (it has no context of its own).
const storageDirTimeout = 30 * time.Second

func (r *Runtime) volumeName(p engine.Project) string {
	return r.cfg.NetworkPrefix + "-" + p.Slug
}

// inspectVolume finds the project's volume; nil when there is none.
func (r *Runtime) inspectVolume(ctx context.Context, p engine.Project) (*volume.Volume, error) {
	name := r.volumeName(p)
	if !volumeNameRE.MatchString(name) {
		return nil, fmt.Errorf("volume name %q: use letters, digits, '_', '.' and '-': %w", name, engine.ErrBadInput)
	}
	res, err := r.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect volume %s: %w", name, err)
	}
	return &res.Volume, nil
}

// ownsVolume refuses a volume of the right name that belongs to another project (of another
// sailtui with the same prefix, or of a deleted project whose slug was taken again).
func (r *Runtime) ownsVolume(p engine.Project, v *volume.Volume) error {
	if v.Labels[LabelProjectID] != p.ID {
		return fmt.Errorf("a Docker volume named %s exists and is not this project's; remove it (docker volume rm %s) or choose another SAILTUI_DOCKER_NETWORK_PREFIX: %w",
			v.Name, v.Name, engine.ErrExists)
	}
	return nil
}

// usableDir is the volume's directory on this machine, or an error that says what to do.
func usableDir(v *volume.Volume) (string, error) {
	if v.Driver != "local" || len(v.Options) > 0 {
		return "", fmt.Errorf("volume %s has driver %q and options %v: sailtui keeps project files only in local volumes without options; remove it (docker volume rm %s) and let sailtui create it: %w",
			v.Name, v.Driver, v.Options, v.Name, engine.ErrBadState)
	}
	mp := v.Mountpoint
	if !filepath.IsAbs(mp) {
		return "", volumeDirErr(v, errors.New("the engine reports no absolute mountpoint"))
	}
	fi, err := os.Stat(mp)
	if err == nil && !fi.IsDir() {
		err = errors.New("not a directory")
	}
	if err == nil {
		// Stat of a directory one may not enter succeeds; the files inside are what matters.
		var f *os.File
		if f, err = os.Open(mp); err == nil {
			_, err = f.Readdirnames(1)
			_ = f.Close()
			if errors.Is(err, io.EOF) {
				err = nil
			}
		}
	}
	if err != nil {
		return "", volumeDirErr(v, err)
	}
	return mp, nil
}

// volumeDirErr explains a volume whose directory this process cannot use. It deliberately does
// not wrap fs.ErrNotExist: the project's storage may well exist, on another machine.
func volumeDirErr(v *volume.Volume, cause error) error {
	return fmt.Errorf("volume %s: its directory on the Docker host, %q, cannot be used from here (%v); "+
		"USE_DOCKER_VOLUMES=true needs sailtui to run on the Docker host itself with access to the Docker root directory (as root): "+
		"run it there, or keep project files in host directories (USE_DOCKER_VOLUMES=false): %w",
		v.Name, v.Mountpoint, errText(cause), engine.ErrBadState)
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// volumeDir is the directory of the project's volume on this machine.
func (r *Runtime) volumeDir(ctx context.Context, p engine.Project) (string, error) {
	v, err := r.inspectVolume(ctx, p)
	if err != nil {
		return "", err
	}
	if v == nil {
		if err := r.refuseHostDir(p); err != nil {
			return "", err
		}
		return "", fmt.Errorf("project has no storage (no volume %s): %w", r.volumeName(p), engine.ErrNotFound)
	}
	if err := r.ownsVolume(p, v); err != nil {
		return "", err
	}
	return usableDir(v)
}

// volumeStorageDir is StorageDir with volumes: the volume's directory, "" when it cannot be used.
func (r *Runtime) volumeStorageDir(p engine.Project) string {
	ctx, cancel := context.WithTimeout(context.Background(), storageDirTimeout)
	defer cancel()
	dir, err := r.volumeDir(ctx, p)
	if err != nil {
		return ""
	}
	return dir
}

// volumeExists reports whether the project's volume is there, and fails when it is there but
// is another project's or cannot be used from here.
func (r *Runtime) volumeExists(ctx context.Context, p engine.Project) (bool, error) {
	v, err := r.inspectVolume(ctx, p)
	if err != nil {
		return false, err
	}
	if v == nil {
		return false, r.refuseHostDir(p)
	}
	if err := r.ownsVolume(p, v); err != nil {
		return false, err
	}
	if _, err := usableDir(v); err != nil {
		return false, err
	}
	return true, nil
}

// ensureVolume creates the project's volume when it is missing, its directory given to the
// container user. The engine hands back the existing volume when two processes create it at
// once, so unlike networks there is never a second one.
func (r *Runtime) ensureVolume(ctx context.Context, p engine.Project) error {
	v, err := r.inspectVolume(ctx, p)
	if err != nil {
		return err
	}
	created := false
	if v == nil {
		if err := r.refuseHostDir(p); err != nil {
			return err
		}
		labels := r.baseLabels(p)
		labels[composeVolume] = composeVolumeKey
		labels[composeVersion] = composeVersionValue
		res, err := r.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: r.volumeName(p), Driver: "local", Labels: labels})
		if err != nil {
			return fmt.Errorf("create volume %s: %w", r.volumeName(p), err)
		}
		v, created = &res.Volume, true
	}
	if err := r.ownsVolume(p, v); err != nil {
		return err
	}
	dir, err := usableDir(v)
	if err != nil {
		if created {
			// Nothing can use it; do not leave an empty volume behind.
			_, _ = r.cli.VolumeRemove(context.WithoutCancel(ctx), v.Name, client.VolumeRemoveOptions{})
		}
		return err
	}
	if created && r.chown {
		if err := os.Lchown(dir, r.owner.UID, r.owner.GID); err != nil {
			return fmt.Errorf("give volume %s to the container user: %w", v.Name, err)
		}
	}
	return nil
}

// removeVolume removes the project's volume; a missing one, or one that is not the project's,
// is left as it is.
func (r *Runtime) removeVolume(ctx context.Context, p engine.Project) error {
	v, err := r.inspectVolume(ctx, p)
	if err != nil || v == nil || r.ownsVolume(p, v) != nil {
		return err
	}
	if _, err := r.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove volume %s: %w", v.Name, err)
	}
	return nil
}

// refuseHostDir fails in volume mode for a project whose files are in a host directory (it
// was made with host directories): an empty volume would hide them.
func (r *Runtime) refuseHostDir(p engine.Project) error {
	dir := r.hostDir(p)
	if _, err := os.Lstat(dir); err != nil {
		return nil
	}
	return fmt.Errorf("project %s keeps its files in the host directory %s (made with USE_DOCKER_VOLUMES=false), not in a volume; "+
		"set USE_DOCKER_VOLUMES=false again, or move them into a volume: hibernate the project with USE_DOCKER_VOLUMES=false, then wake it with USE_DOCKER_VOLUMES=true: %w",
		p.Slug, dir, engine.ErrBadState)
}

// refuseVolumeInHostMode fails with host directories for a project whose files are in a
// volume (it was made with Config.Volumes): an empty directory would hide them.
func (r *Runtime) refuseVolumeInHostMode(ctx context.Context, p engine.Project) error {
	if !volumeNameRE.MatchString(r.volumeName(p)) {
		return nil // no volume can have that name
	}
	v, err := r.inspectVolume(ctx, p)
	if err != nil || v == nil || r.ownsVolume(p, v) != nil {
		return err
	}
	return fmt.Errorf("project %s keeps its files in the Docker volume %s (made with USE_DOCKER_VOLUMES=true), not in a host directory; "+
		"set USE_DOCKER_VOLUMES=true again, or move them: hibernate the project with USE_DOCKER_VOLUMES=true, then wake it with USE_DOCKER_VOLUMES=false: %w",
		p.Slug, v.Name, engine.ErrBadState)
}
