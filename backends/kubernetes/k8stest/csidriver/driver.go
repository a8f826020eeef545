// Package csidriver is the real node's CSI driver (issue 33): a hostpath-like driver behind the
// real CSI API, so that the external provisioner, the snapshot controller and its sidecar, the
// PV binder and the kubelet's volume manager in front of it are all the real ones.
//
// A volume is a directory on this host; a snapshot is a GNU tar of a volume's directory
// (--sparse, --xattrs, --acls, --numeric-owner: ownership, modes, hard links, sparse files and
// extended attributes survive), ready as soon as it is written; a volume made from a snapshot is
// that tar extracted. Like upstream csi-driver-host-path (and an EBS snapshot), a snapshot is a
// copy of the volume as it is read, not crash-consistent for a writer that is not stopped.
// NodePublishVolume bind-mounts the volume's directory at the target; there is no staging.
//
// Everything the driver knows is on disk under its root (one JSON record per volume and per
// snapshot, written before an operation answers), so a restarted driver keeps its volumes,
// snapshots and publications.
//
// It is test-harness infrastructure, like k8stest: the engine and the backends never import it.
package csidriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// TopologyKey is the topology segment every volume and node carries: the node a volume's
// directory lives on, so the scheduler places a volume's pods there.
const TopologyKey = "topology.csi.sailtui.invalid/node"

// DefaultName is the driver name the node registers.
const DefaultName = "csi.sailtui.invalid"

// Config is what a driver serves.
type Config struct {
	// Name is the CSI driver name (CSIDriver object, StorageClass provisioner,
	// VolumeSnapshotClass driver).
	Name string
	// Version is reported by GetPluginInfo.
	Version string
	// NodeID is this node's name as the kubelet knows it (NodeGetInfo).
	NodeID string
	// Root holds the volumes, the snapshots and their records.
	Root string
	// Log receives one line per failed call and per change; nil discards.
	Log *slog.Logger
}

// defaultCapacity is the size of a volume whose request names none.
const defaultCapacity = 1 << 30

// volume is the record of one volume, volumes/<id>.json beside its directory volumes/<id>.
type volume struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Capacity int64  `json:"capacity"`
	// FromSnapshot is the snapshot the volume was restored from, if any.
	FromSnapshot string    `json:"from_snapshot,omitempty"`
	Created      time.Time `json:"created"`
	// Published maps each target path the volume is bind-mounted at to whether read-only.
	Published map[string]bool `json:"published,omitempty"`
}

// snapshot is the record of one snapshot, snapshots/<id>.json beside its tar snapshots/<id>.tar.
type snapshot struct {
	ID     string    `json:"id"`
	Name   string    `json:"name"`
	Source string    `json:"source"`
	Size   int64     `json:"size"` // the source volume's capacity: the restore size
	Bytes  int64     `json:"bytes"`
	Taken  time.Time `json:"taken"`
}

// Driver serves the CSI Identity, Controller and Node services.
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	cfg Config
	log *slog.Logger

	// mu serializes every change and the lookups around it. An operation that copies data
	// (snapshot, restore) holds it throughout: a retried call then waits for the first one and
	// finds its result, rather than starting a second copy.
	mu        sync.Mutex
	volumes   map[string]*volume
	snapshots map[string]*snapshot
}

// New opens (or creates) the driver's state under cfg.Root. What an interrupted operation left
// behind (a directory or tar without its record, scratch files) is removed.
func New(cfg Config) (*Driver, error) {
	if cfg.Name == "" || cfg.NodeID == "" || cfg.Root == "" {
		return nil, errors.New("csidriver: Name, NodeID and Root are required")
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Driver{cfg: cfg, log: log, volumes: map[string]*volume{}, snapshots: map[string]*snapshot{}}
	for _, sub := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(d.path(sub), 0o700); err != nil {
			return nil, fmt.Errorf("csidriver: create %s: %w", d.path(sub), err)
		}
	}
	if err := os.RemoveAll(d.path("tmp")); err != nil {
		return nil, fmt.Errorf("csidriver: clear scratch: %w", err)
	}
	if err := os.Mkdir(d.path("tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("csidriver: create scratch: %w", err)
	}
	if err := load(d.path("volumes"), ".json", d.volumes); err != nil {
		return nil, err
	}
	if err := load(d.path("snapshots"), ".json", d.snapshots); err != nil {
		return nil, err
	}
	// A record is written last, so data without one is an interrupted create; a record
	// without its data is a store damaged behind the driver's back, dropped and logged.
	if err := d.sweep("volumes", func(name string) bool {
		_, ok := d.volumes[name]
		return ok
	}); err != nil {
		return nil, err
	}
	if err := d.sweep("snapshots", func(name string) bool {
		_, ok := d.snapshots[strings.TrimSuffix(name, ".tar")]
		return ok && strings.HasSuffix(name, ".tar")
	}); err != nil {
		return nil, err
	}
	for id := range d.volumes {
		if _, err := os.Stat(d.volumeDir(id)); err != nil {
			log.Warn("volume record without its directory, dropped", "volume", id, "err", err)
			delete(d.volumes, id)
			_ = os.Remove(d.path("volumes", id+".json"))
		}
	}
	for id := range d.snapshots {
		if _, err := os.Stat(d.snapshotTar(id)); err != nil {
			log.Warn("snapshot record without its tar, dropped", "snapshot", id, "err", err)
			delete(d.snapshots, id)
			_ = os.Remove(d.path("snapshots", id+".json"))
		}
	}
	return d, nil
}

// Serve answers CSI calls on lis until ctx ends.
func (d *Driver) Serve(ctx context.Context, lis net.Listener) error {
	srv := grpc.NewServer(grpc.UnaryInterceptor(d.logCall))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	return serveUntil(ctx, srv, lis)
}

// serveUntil runs srv on lis and stops it gracefully when ctx ends.
func serveUntil(ctx context.Context, srv *grpc.Server, lis net.Listener) error {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			srv.GracefulStop()
		case <-done:
		}
	}()
	err := srv.Serve(lis)
	close(done)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// ListenUnix listens on a unix socket at path, replacing a stale socket a previous run left.
func ListenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("csidriver: create socket directory: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("csidriver: remove stale socket %s: %w", path, err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("csidriver: listen on %s: %w", path, err)
	}
	return lis, nil
}

func (d *Driver) logCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		d.log.Info("call failed", "method", info.FullMethod, "err", err)
	}
	return resp, err
}

func (d *Driver) path(parts ...string) string {
	return filepath.Join(append([]string{d.cfg.Root}, parts...)...)
}

func (d *Driver) volumeDir(id string) string   { return d.path("volumes", id) }
func (d *Driver) snapshotTar(id string) string { return d.path("snapshots", id+".tar") }

// load reads every record *.json of dir into m, keyed by file name.
func load[T any](dir, ext string, m map[string]*T) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("csidriver: read %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ext) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("csidriver: read record: %w", err)
		}
		v := new(T)
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("csidriver: record %s: %w", filepath.Join(dir, name), err)
		}
		m[strings.TrimSuffix(name, ext)] = v
	}
	return nil
}

// sweep removes every entry of sub that is neither a record nor data a record names.
func (d *Driver) sweep(sub string, known func(name string) bool) error {
	entries, err := os.ReadDir(d.path(sub))
	if err != nil {
		return fmt.Errorf("csidriver: read %s: %w", d.path(sub), err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".json") || known(name) {
			continue
		}
		d.log.Warn("removing what an interrupted operation left", "path", d.path(sub, name))
		if err := os.RemoveAll(d.path(sub, name)); err != nil {
			return fmt.Errorf("csidriver: remove leftover: %w", err)
		}
	}
	return nil
}

// writeRecord writes v as sub/<id>.json, replacing it whole: a crash leaves the old record or
// the new one, never part of one.
func (d *Driver) writeRecord(sub, id string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(d.path("tmp"), "record-*")
	if err != nil {
		return fmt.Errorf("write record %s/%s: %w", sub, id, err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), d.path(sub, id+".json"))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write record %s/%s: %w", sub, id, err)
	}
	return nil
}

func (d *Driver) removeRecord(sub, id string) error {
	if err := os.Remove(d.path(sub, id+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove record %s/%s: %w", sub, id, err)
	}
	return nil
}

// sortedSnapshots is every snapshot, oldest first (ties by id): the order ListSnapshots pages.
func (d *Driver) sortedSnapshots() []*snapshot {
	out := make([]*snapshot, 0, len(d.snapshots))
	for _, s := range d.snapshots {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Taken.Equal(out[j].Taken) {
			return out[i].Taken.Before(out[j].Taken)
		}
		return out[i].ID < out[j].ID
	})
	return out
}
