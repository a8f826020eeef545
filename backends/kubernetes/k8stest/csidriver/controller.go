package csidriver

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/uuid"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// HoldParameter, set to "true" in a VolumeSnapshotClass's parameters, makes every snapshot
// of that class wait (CreateSnapshot answers Unavailable, which the sidecar retries): a test
// holds readiness back for as long as it needs with a class of this driver, which sailtui
// accepts for the driver's volumes where it refuses a class of another driver.
const HoldParameter = "hold-snapshots"

// Identity

func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.cfg.Name, VendorVersion: d.cfg.Version}, nil
}

func (d *Driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	caps := []csi.PluginCapability_Service_Type{
		csi.PluginCapability_Service_CONTROLLER_SERVICE,
		// Volumes live on one node: the provisioner passes topology in and puts the
		// volume's on the PV as node affinity.
		csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS,
	}
	out := &csi.GetPluginCapabilitiesResponse{}
	for _, c := range caps {
		out.Capabilities = append(out.Capabilities, &csi.PluginCapability{
			Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: c}}})
	}
	return out, nil
}

func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// Controller

func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	out := &csi.ControllerGetCapabilitiesResponse{}
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
	} {
		out.Capabilities = append(out.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return out, nil
}

// topology is where every volume of this driver is: this node.
func (d *Driver) topology() []*csi.Topology {
	return []*csi.Topology{{Segments: map[string]string{TopologyKey: d.cfg.NodeID}}}
}

// reachable says whether a request's topology requirement admits this node.
func (d *Driver) reachable(req *csi.TopologyRequirement) bool {
	if req == nil || len(req.GetRequisite()) == 0 {
		return true
	}
	for _, t := range req.GetRequisite() {
		if n, ok := t.GetSegments()[TopologyKey]; ok && n == d.cfg.NodeID {
			return true
		}
	}
	return false
}

// checkCapabilities refuses what a directory on one node cannot be: a block device, or
// shared by several nodes.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	for _, c := range caps {
		if c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "only the mount access type is supported")
		}
		switch c.GetAccessMode().GetMode() {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		default:
			return status.Errorf(codes.InvalidArgument, "access mode %s is not supported: a volume is a directory on one node",
				c.GetAccessMode().GetMode())
		}
	}
	return nil
}

// capacity is the size a volume is given for a range: the requested size, or the default
// within the limit.
func capacity(r *csi.CapacityRange) (int64, error) {
	req, lim := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || lim < 0 {
		return 0, status.Error(codes.InvalidArgument, "capacity must not be negative")
	}
	if lim > 0 && req > lim {
		return 0, status.Errorf(codes.InvalidArgument, "required %d bytes exceed the limit %d", req, lim)
	}
	switch {
	case req > 0:
		return req, nil
	case lim > 0 && lim < defaultCapacity:
		return lim, nil
	default:
		return defaultCapacity, nil
	}
}

func (d *Driver) csiVolume(v *volume) *csi.Volume {
	out := &csi.Volume{VolumeId: v.ID, CapacityBytes: v.Capacity, AccessibleTopology: d.topology()}
	if v.FromSnapshot != "" {
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.FromSnapshot}}}
	}
	return out
}

func (d *Driver) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	size, err := capacity(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	var from string
	if src := req.GetVolumeContentSource(); src != nil {
		if src.GetSnapshot() == nil {
			return nil, status.Error(codes.InvalidArgument, "only a snapshot can be a volume's content source")
		}
		from = src.GetSnapshot().GetSnapshotId()
		if from == "" {
			return nil, status.Error(codes.InvalidArgument, "content source snapshot id is required")
		}
	}
	if !d.reachable(req.GetAccessibilityRequirements()) {
		return nil, status.Errorf(codes.ResourceExhausted, "no requisite topology is node %s, the only one this driver serves", d.cfg.NodeID)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range d.volumes {
		if v.Name != req.GetName() {
			continue
		}
		if v.Capacity != size || v.FromSnapshot != from {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with %d bytes from snapshot %q", v.Name, v.Capacity, v.FromSnapshot)
		}
		return &csi.CreateVolumeResponse{Volume: d.csiVolume(v)}, nil
	}
	var snap *snapshot
	if from != "" {
		snap = d.snapshots[from]
		if snap == nil {
			return nil, status.Errorf(codes.NotFound, "snapshot %s not found", from)
		}
		if snap.Size > size {
			return nil, status.Errorf(codes.OutOfRange, "snapshot %s needs %d bytes, the volume has %d", from, snap.Size, size)
		}
	}
	v := &volume{ID: uuid.NewString(), Name: req.GetName(), Capacity: size, FromSnapshot: from, Created: time.Now().UTC()}
	// The directory is made (and filled) in scratch and renamed into place, then recorded:
	// a crash at any point leaves no half-restored volume under a record.
	tmp := d.path("tmp", v.ID)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, status.Errorf(codes.Internal, "create volume directory: %v", err)
	}
	if snap != nil {
		// Not the call's context: a provisioner that gives up and retries waits on mu for
		// this copy and then finds the volume, rather than cancel it and start over.
		if err := untar(context.WithoutCancel(ctx), d.snapshotTar(snap.ID), tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return nil, status.Errorf(codes.Internal, "restore snapshot %s: %v", snap.ID, err)
		}
	}
	if err := os.Rename(tmp, d.volumeDir(v.ID)); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, status.Errorf(codes.Internal, "create volume directory: %v", err)
	}
	if err := d.writeRecord("volumes", v.ID, v); err != nil {
		_ = os.RemoveAll(d.volumeDir(v.ID))
		return nil, status.Error(codes.Internal, err.Error())
	}
	d.volumes[v.ID] = v
	d.log.Info("volume created", "volume", v.ID, "name", v.Name, "bytes", v.Capacity, "from_snapshot", from)
	return &csi.CreateVolumeResponse{Volume: d.csiVolume(v)}, nil
}

func (d *Driver) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.volumes[id]
	if v == nil {
		return &csi.DeleteVolumeResponse{}, nil
	}
	// Removing the directory would empty every bind mount of it under a running pod.
	if len(v.Published) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published at %d target(s)", id, len(v.Published))
	}
	// The record goes first: a crash after it leaves a directory without a record, which
	// the next start removes, never a record of a half-deleted directory.
	if err := d.removeRecord("volumes", id); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	delete(d.volumes, id)
	if err := os.RemoveAll(d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "remove volume %s: %v", id, err)
	}
	d.log.Info("volume deleted", "volume", id, "name", v.Name)
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *Driver) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	d.mu.Lock()
	_, ok := d.volumes[req.GetVolumeId()]
	d.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", req.GetVolumeId())
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

// GetCapacity is the free space of the filesystem under the driver's root: volumes are
// directories on it and their sizes are not enforced.
func (d *Driver) GetCapacity(ctx context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	if len(req.GetVolumeCapabilities()) > 0 {
		if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
			return &csi.GetCapacityResponse{}, nil
		}
	}
	if t := req.GetAccessibleTopology(); t != nil {
		if n, ok := t.GetSegments()[TopologyKey]; ok && n != d.cfg.NodeID {
			return &csi.GetCapacityResponse{}, nil
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(d.cfg.Root, &st); err != nil {
		return nil, status.Errorf(codes.Internal, "statfs %s: %v", d.cfg.Root, err)
	}
	return &csi.GetCapacityResponse{AvailableCapacity: int64(st.Bavail) * st.Bsize}, nil
}

func (d *Driver) csiSnapshot(s *snapshot) *csi.Snapshot {
	return &csi.Snapshot{SnapshotId: s.ID, SourceVolumeId: s.Source, SizeBytes: s.Size,
		CreationTime: timestamppb.New(s.Taken), ReadyToUse: true}
}

func (d *Driver) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "source volume id is required")
	}
	if req.GetParameters()[HoldParameter] == "true" {
		// csi-snapshotter retries with backoff: the snapshot stays not ready.
		return nil, status.Errorf(codes.Unavailable, "snapshots of this class are held (%s)", HoldParameter)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.snapshots {
		if s.Name != req.GetName() {
			continue
		}
		if s.Source != req.GetSourceVolumeId() {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %q exists of volume %s", s.Name, s.Source)
		}
		return &csi.CreateSnapshotResponse{Snapshot: d.csiSnapshot(s)}, nil
	}
	v := d.volumes[req.GetSourceVolumeId()]
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", req.GetSourceVolumeId())
	}
	s := &snapshot{ID: uuid.NewString(), Name: req.GetName(), Source: v.ID, Size: v.Capacity, Taken: time.Now().UTC()}
	tmp := d.path("tmp", s.ID+".tar")
	// Not the call's context: see CreateVolume.
	if err := tarDir(context.WithoutCancel(ctx), d.volumeDir(v.ID), tmp); err != nil {
		_ = os.Remove(tmp)
		return nil, status.Errorf(codes.Internal, "snapshot volume %s: %v", v.ID, err)
	}
	fi, err := os.Stat(tmp)
	if err == nil {
		s.Bytes = fi.Size()
		err = os.Rename(tmp, d.snapshotTar(s.ID))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return nil, status.Errorf(codes.Internal, "store snapshot: %v", err)
	}
	if err := d.writeRecord("snapshots", s.ID, s); err != nil {
		_ = os.Remove(d.snapshotTar(s.ID))
		return nil, status.Error(codes.Internal, err.Error())
	}
	d.snapshots[s.ID] = s
	d.log.Info("snapshot taken", "snapshot", s.ID, "name", s.Name, "volume", v.ID, "bytes", s.Bytes)
	return &csi.CreateSnapshotResponse{Snapshot: d.csiSnapshot(s)}, nil
}

func (d *Driver) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot id is required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.snapshots[id]
	if s == nil {
		return &csi.DeleteSnapshotResponse{}, nil
	}
	if err := d.removeRecord("snapshots", id); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	delete(d.snapshots, id)
	if err := os.Remove(d.snapshotTar(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove snapshot %s: %v", id, err)
	}
	d.log.Info("snapshot deleted", "snapshot", id, "name", s.Name)
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots pages through the snapshots oldest first; a token is the index of the next
// entry in that order.
func (d *Driver) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Error(codes.InvalidArgument, "max_entries must not be negative")
	}
	d.mu.Lock()
	all := d.sortedSnapshots()
	d.mu.Unlock()
	var match []*snapshot
	for _, s := range all {
		if id := req.GetSnapshotId(); id != "" && s.ID != id {
			continue
		}
		if src := req.GetSourceVolumeId(); src != "" && s.Source != src {
			continue
		}
		match = append(match, s)
	}
	start := 0
	if tok := req.GetStartingToken(); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(match) {
			return nil, status.Errorf(codes.Aborted, "starting token %q is not valid", tok)
		}
		start = n
	}
	end := len(match)
	if m := int(req.GetMaxEntries()); m > 0 && start+m < end {
		end = start + m
	}
	out := &csi.ListSnapshotsResponse{}
	for _, s := range match[start:end] {
		out.Entries = append(out.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: d.csiSnapshot(s)})
	}
	if end < len(match) {
		out.NextToken = strconv.Itoa(end)
	}
	return out, nil
}
