package k8stest

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// MarkPodsReady plays kubelet once: every pod in namespace (all namespaces for "") that is not
// being deleted and not yet Ready gets the status a kubelet reports for a pod whose containers
// all started and pass their probes: phase Running, conditions Ready, container statuses
// running. The ReplicaSet and Deployment controllers then count the pods available. It returns
// how many pods it marked. No process runs, so exec and logs still have nothing to talk to.
func (c *Cluster) MarkPodsReady(ctx context.Context, namespace string) (int, error) {
	pods, err := c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("k8stest: list pods in %q: %w", namespace, err)
	}
	n := 0
	for i := range pods.Items {
		marked, err := c.markPodReady(ctx, &pods.Items[i])
		if err != nil {
			return n, err
		}
		if marked {
			n++
		}
	}
	return n, nil
}

// StartKubelet plays kubelet until stop is called or tb ends: it watches the pods of
// namespace ("" for all) and marks each one Ready as it appears, as MarkPodsReady does. Use it
// when the code under test waits for pods it creates itself. Failures are reported on tb.
func (c *Cluster) StartKubelet(tb testing.TB, namespace string) (stop func()) {
	lw := cache.NewListWatchFromClient(c.Client.CoreV1().RESTClient(), "pods", namespace, fields.Everything())
	return c.runInformer(tb, "kubelet", lw, &corev1.Pod{}, func(ctx context.Context, obj runtime.Object) error {
		_, err := c.markPodReady(ctx, obj.(*corev1.Pod))
		return err
	})
}

func podReady(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// markPodReady sets pod's status to running and ready unless it is already, or is going away.
func (c *Cluster) markPodReady(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if pod.DeletionTimestamp != nil || podReady(pod) {
		return false, nil
	}
	pods := c.Client.CoreV1().Pods(pod.Namespace)
	ip := c.podIP()
	marked := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.DeletionTimestamp != nil || podReady(cur) {
			return nil
		}
		now := metav1.Now()
		st := &cur.Status
		st.Phase = corev1.PodRunning
		st.HostIP, st.HostIPs = "127.0.0.1", []corev1.HostIP{{IP: "127.0.0.1"}}
		if st.PodIP == "" {
			st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		}
		if st.StartTime == nil {
			st.StartTime = &now
		}
		st.Conditions = nil
		for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized,
			corev1.PodScheduled, corev1.ContainersReady, corev1.PodReady} {
			st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		started := true
		st.ContainerStatuses = nil
		for _, ctr := range cur.Spec.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
				Name:        ctr.Name,
				Image:       ctr.Image,
				ImageID:     "k8stest://" + ctr.Image,
				ContainerID: "k8stest://" + string(cur.UID) + "/" + ctr.Name,
				Ready:       true,
				Started:     &started,
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			})
		}
		if _, err := pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
		marked = true
		return nil
	})
	if apierrors.IsNotFound(err) {
		return false, nil // deleted meanwhile: nothing to run
	}
	if err != nil {
		return false, fmt.Errorf("k8stest: mark pod %s/%s ready: %w", pod.Namespace, pod.Name, err)
	}
	return marked, nil
}

// podIP hands out addresses from 10.244.0.0/16, the usual pod network of kind and kubeadm,
// so that pod IPs look real and differ.
func (c *Cluster) podIP() string {
	c.ipMu.Lock()
	defer c.ipMu.Unlock()
	c.nextIP++
	n := c.nextIP % (1<<16 - 2)
	return netip.AddrFrom4([4]byte{10, 244, byte(n >> 8), byte(n)}).String()
}

// runInformer calls handle for every object lw lists or watches, added or updated, until stop
// is called or tb ends.
func (c *Cluster) runInformer(tb testing.TB, role string, lw cache.ListerWatcher, obj runtime.Object,
	handle func(context.Context, runtime.Object) error) (stop func()) {
	stop, err := runInformer(lw, obj, handle, nil, func(err error) { tb.Errorf("k8stest %s: %v", role, err) })
	if err != nil {
		tb.Fatalf("k8stest %s: %v", role, err)
	}
	tb.Cleanup(stop)
	return stop
}

// runInformer calls handle for every object lw lists or watches, added or updated, and gone
// (when gone is not nil) until stop is called; a handler's error goes to onErr.
func runInformer(lw cache.ListerWatcher, obj runtime.Object, handle, gone func(context.Context, runtime.Object) error,
	onErr func(error)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
	call := func(f func(context.Context, runtime.Object) error, o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		ro, ok := o.(runtime.Object)
		if !ok || ctx.Err() != nil {
			return
		}
		if err := f(ctx, ro); err != nil && ctx.Err() == nil {
			onErr(err)
		}
	}
	handlers := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { call(handle, o) },
		UpdateFunc: func(_, o any) { call(handle, o) },
	}
	if gone != nil {
		handlers.DeleteFunc = func(o any) { call(gone, o) }
	}
	if _, err := inf.AddEventHandler(handlers); err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}, nil
}
