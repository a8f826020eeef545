package csidriver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.cfg.NodeID, AccessibleTopology: d.topology()[0]}, nil
}

// NodeGetCapabilities offers nothing beyond publishing: a directory needs no staging.
func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodePublishVolume bind-mounts the volume's directory at the target path (read-only when
// asked); a target where it is mounted already is answered as done.
func (d *Driver) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target path is required")
	case req.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "volume capability is required")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	target = filepath.Clean(target)
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.volumes[id]
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", id)
	}
	mounted, err := isMountPoint(target)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if !mounted {
		if err := os.MkdirAll(target, 0o750); err != nil {
			return nil, status.Errorf(codes.Internal, "create target %s: %v", target, err)
		}
		if err := unix.Mount(d.volumeDir(id), target, "", unix.MS_BIND, ""); err != nil {
			return nil, status.Errorf(codes.Internal, "bind-mount volume %s at %s: %v", id, target, err)
		}
		if req.GetReadonly() {
			if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				_ = unix.Unmount(target, 0)
				return nil, status.Errorf(codes.Internal, "make %s read-only: %v", target, err)
			}
		}
	}
	if ro, ok := v.Published[target]; !ok || ro != req.GetReadonly() {
		if v.Published == nil {
			v.Published = map[string]bool{}
		}
		v.Published[target] = req.GetReadonly()
		if err := d.writeRecord("volumes", id, v); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target and removes it; a target already gone is done.
func (d *Driver) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "target path is required")
	}
	target = filepath.Clean(target)
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		mounted, err := isMountPoint(target)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if !mounted {
			break
		}
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove target %s: %v", target, err)
	}
	// The mount goes whatever the driver knows of the volume: the kubelet unpublishes what
	// it published, even after the record is gone.
	if v := d.volumes[id]; v != nil {
		if _, ok := v.Published[target]; ok {
			delete(v.Published, target)
			if err := d.writeRecord("volumes", id, v); err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
		}
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// isMountPoint says whether path is a mount point in this process's mount namespace.
func isMountPoint(path string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ...
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && unescapeMountPath(fields[4]) == path {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	return false, nil
}

// unescapeMountPath undoes the octal escapes (\040 for a space...) of /proc/self/mountinfo.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
