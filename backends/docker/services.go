package docker

import (
	"context"
	"fmt"
	"maps"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"

	"github.com/sailtui/sailtui/engine"
)

// Service containers (a database of the project): the service's own image, run with the
// image's own user, working directory and command (unless the service names one), on the
// project network under its name, with a named volume of its own, <prefix>-<slug>-<name>,
// mounted at its data path. Unlike the project volume, the image's contents at that path are
// copied into a new volume, as `docker run -v` does: images such as postgres ship their data
// directory with the owner the server runs as. Services are not routed (no Traefik labels).
//
// The volume is part of the project's storage: snapshots capture it (PartDir), hibernation and
// deletion remove it only after one did, and restores recreate it.

// LabelServiceVolume marks a service's data volume with the service's name.
const LabelServiceVolume = "sailtui.service-volume"

// RunsServices implements engine.ServiceRunner.
func (r *Runtime) RunsServices() bool { return true }

// serviceVolumeName is the data volume of service name of p.
func (r *Runtime) serviceVolumeName(p engine.Project, name string) string {
	return r.cfg.NetworkPrefix + "-" + p.Slug + "-" + name
}

// serviceVolume finds (and with create, makes) the data volume of service name of p; nil
// when there is none and create is false. A volume of that name that is not this service's is
// refused, never used.
func (r *Runtime) serviceVolume(ctx context.Context, p engine.Project, name string, create bool) (*volume.Volume, error) {
	vname := r.serviceVolumeName(p, name)
	if !volumeNameRE.MatchString(vname) {
		return nil, fmt.Errorf("volume name %q: use letters, digits, '_', '.' and '-': %w", vname, engine.ErrBadInput)
	}
	res, err := r.cli.VolumeInspect(ctx, vname, client.VolumeInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		if !create {
			return nil, nil
		}
		labels := r.baseLabels(p)
		labels[LabelServiceVolume] = name
		labels[composeVolume] = name + "-data"
		labels[composeVersion] = composeVersionValue
		cres, err := r.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: vname, Driver: "local", Labels: labels})
		if err != nil {
			return nil, fmt.Errorf("create volume %s: %w", vname, err)
		}
		res.Volume = cres.Volume
	case err != nil:
		return nil, fmt.Errorf("inspect volume %s: %w", vname, err)
	}
	v := &res.Volume
	if v.Labels[LabelProjectID] != p.ID || v.Labels[LabelServiceVolume] != name {
		return nil, fmt.Errorf("a Docker volume named %s exists and is not the data volume of service %s of this project; remove it (docker volume rm %s) or rename the service: %w",
			vname, name, vname, engine.ErrExists)
	}
	return v, nil
}

// PartDir implements archive.PartDirs: the directory of the service's data volume on this
// machine, which snapshots read and restores replace. As for USE_DOCKER_VOLUMES, that needs
// this process on the Docker host with access to the Docker root directory.
func (r *Runtime) PartDir(ctx context.Context, p engine.Project, name string, create bool) (string, error) {
	v, err := r.serviceVolume(ctx, p, name, create)
	if err != nil {
		return "", err
	}
	if v == nil {
		return "", fmt.Errorf("service %s has no data volume %s: %w", name, r.serviceVolumeName(p, name), engine.ErrNotFound)
	}
	return usableDir(v)
}

// removeServiceVolumes removes the data volumes of the services among cs (after a snapshot of
// them: DestroyProject); a missing one, or one that is not the service's, is left alone.
func (r *Runtime) removeServiceVolumes(ctx context.Context, p engine.Project, cs []engine.Container) error {
	for _, c := range cs {
		if !c.IsService() {
			continue
		}
		v, err := r.serviceVolume(ctx, p, c.Name, false)
		if err != nil || v == nil {
			continue
		}
		if _, err := r.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("remove volume %s: %w", v.Name, err)
		}
	}
	return nil
}

// serviceSpec is what service container c of p is created from.
func (r *Runtime) serviceSpec(ctx context.Context, p engine.Project, c engine.Container, spec engine.StartSpec) (service, error) {
	if c.Image == "" {
		return service{}, fmt.Errorf("service container %s has no image: %w", c.Name, engine.ErrBadInput)
	}
	port := spec.Port
	if port <= 0 || port > 65535 {
		return service{}, fmt.Errorf("service port %d out of range 1-65535: %w", port, engine.ErrBadInput)
	}
	v, err := r.serviceVolume(ctx, p, c.Name, true)
	if err != nil {
		return service{}, err
	}
	name := r.containerName(p, c)
	env := map[string]string{}
	maps.Copy(env, spec.Env)
	maps.Copy(env, c.Env)
	maps.Copy(env, map[string]string{"PROJECT_ID": p.ID, "PROJECT_SLUG": p.Slug, "CONTAINER_ID": name, "CONTAINER_NAME": c.Name})
	if _, err := envList(env); err != nil {
		return service{}, err
	}
	labels := r.containerLabels(p, c)
	labels[LabelKind] = string(engine.KindService)
	unrouted(labels)
	return service{
		Name:          c.Name,
		ContainerName: name,
		Image:         c.Image,
		Command:       spec.Command,
		Env:           env,
		Port:          port,
		Labels:        labels,
		Volume:        v.Name,
		Target:        c.DataPath,
		Network:       r.networkName(p),
		PublishHost:   r.cfg.PublishHost,
		DependsOn:     spec.DependsOn,
		Service:       true,
	}, nil
}

// LabelKind marks a container that is not an app with its kind ("service").
const LabelKind = "sailtui.kind"

// routable marks the containers a Traefik of the reference platform routes: it only routes
// containers that carry the label.
func routable(labels map[string]string) {
	labels[labelRoutable] = "true"
}

const labelRoutable = "com.tesslate.routable"

// unrouted keeps a Traefik from routing a service: a Traefik that exposes every container it
// sees (exposedByDefault) would route one without labels, and SAILTUI_DOCKER_LABELS may carry
// Traefik labels meant for the apps.
func unrouted(labels map[string]string) {
	for k := range labels {
		if strings.HasPrefix(k, "traefik.") || k == labelRoutable {
			delete(labels, k)
		}
	}
	labels["traefik.enable"] = "false"
}
