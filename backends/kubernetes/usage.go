package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sailtui/sailtui/engine"
)

// metricsGroupVersion is the resource metrics API metrics-server serves.
const metricsGroupVersion = "metrics.k8s.io/v1beta1"

var _ engine.UsageReader = (*Runtime)(nil)

// podMetricsList is the part of a metrics.k8s.io PodMetricsList Usage reads.
type podMetricsList struct {
	Items []struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Containers []struct {
			Usage map[string]resource.Quantity `json:"usage"`
		} `json:"containers"`
	} `json:"items"`
}

// Usage implements engine.UsageReader with the resource metrics API (metrics.k8s.io, served by
// metrics-server), in one request for the project: the pods of each container's Deployment,
// their containers' CPU and working-set memory summed. The figures are metrics-server's own,
// averaged over its window (15 s to a minute); it keeps no readings of sailtui's. A cluster
// without the API gives an error wrapping ErrNotAvailable that says so.
func (r *Runtime) Usage(ctx context.Context, p engine.Project, cs []engine.Container) (map[string]engine.ContainerUsage, error) {
	raw, err := r.kube.Raw().Get().
		AbsPath("/apis/"+metricsGroupVersion, "namespaces", r.Namespace(p), "pods").
		Param("labelSelector", LabelProjectID+"="+labelValue(p.ID)+","+LabelComponent+"="+ComponentDev).
		DoRaw(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsServiceUnavailable(err) {
			return nil, r.metricsMissing(ctx, err)
		}
		return nil, fmt.Errorf("pod metrics: %w", err)
	}
	var list podMetricsList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("pod metrics: %w", err)
	}
	byLabel := make(map[string]string, len(cs))
	for _, c := range cs {
		byLabel[labelValue(c.Name)] = c.Name
	}
	out := map[string]engine.ContainerUsage{}
	for _, pod := range list.Items {
		name, ok := byLabel[pod.Metadata.Labels[LabelContainerID]]
		if !ok {
			continue
		}
		u := out[name]
		for _, c := range pod.Containers {
			if q, ok := c.Usage["cpu"]; ok {
				u.CPU += q.AsApproximateFloat64()
			}
			if q, ok := c.Usage["memory"]; ok {
				u.Memory += q.Value()
			}
		}
		out[name] = u
	}
	return out, nil
}

// metricsMissing tells a cluster that serves no metrics API (the group is not there) from one
// whose metrics-server does not answer; both are ErrNotAvailable, each with what to do.
func (r *Runtime) metricsMissing(ctx context.Context, err error) error {
	if _, derr := r.kube.Raw().Get().AbsPath("/apis/" + metricsGroupVersion).DoRaw(ctx); apierrors.IsNotFound(derr) {
		return fmt.Errorf("CPU and memory %w: the cluster serves no metrics API (%s); install metrics-server to see them", engine.ErrNotAvailable, metricsGroupVersion)
	}
	return fmt.Errorf("CPU and memory %w: the metrics API (%s) does not answer (%v); check metrics-server (kubectl -n kube-system get pods)", engine.ErrNotAvailable, metricsGroupVersion, err)
}
