package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// patcher is the Patch method every typed client has.
type patcher[T any] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// apply makes obj what the cluster has, in one request (server-side apply): a missing object is
// created, an existing one gets sailtui's fields, and fields others own are left alone. It is
// what makes every create idempotent.
func apply[T any](ctx context.Context, client patcher[T], obj metav1.Object) (T, error) {
	var zero T
	data, err := json.Marshal(obj)
	if err != nil {
		return zero, err
	}
	force := true
	return client.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
}

// errWaitTimeout is wrapped by the waits when their time is up.
var errWaitTimeout = errors.New("timed out")

// waitFor watches the object name (in namespace, "" for cluster objects) of resource through
// client until done says so; done gets nil once the object is gone. Waits watch; they never
// poll on a timer. timeout bounds the wait.
func waitFor(ctx context.Context, client rest.Interface, resource, namespace, name string, obj runtime.Object,
	timeout time.Duration, done func(obj runtime.Object) (bool, error)) error {
	parent, stopWaiting := engine.WaitContext(ctx) // a stopping sweep cuts the wait short
	defer stopWaiting()
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	lw := cache.NewListWatchFromClient(client, resource, namespace, fields.OneTermEqualSelector("metadata.name", name))
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	reportWait(parent, resource, key)
	pre := func(store cache.Store) (bool, error) {
		cur, ok, err := store.GetByKey(key)
		if err != nil {
			return false, err
		}
		if !ok {
			return done(nil)
		}
		return done(cur.(runtime.Object))
	}
	_, err := watchtools.UntilWithSync(ctx, lw, obj, pre, onEvent(done))
	return waitErr(parent, ctx, err, resource, key, timeout)
}

// waitFrom is waitFor for a caller holding the object as its own write or read returned it:
// done is asked about that object first, then one watch from its resourceVersion delivers every
// change after it (a list is not needed).
func waitFrom(ctx context.Context, client rest.Interface, resource string, cur metav1.Object, timeout time.Duration,
	done func(obj runtime.Object) (bool, error)) error {
	obj, ok := cur.(runtime.Object)
	if !ok {
		return fmt.Errorf("wait for %s %s: not an API object", resource, cur.GetName())
	}
	if ok, err := done(obj); ok || err != nil {
		return err
	}
	parent, stopWaiting := engine.WaitContext(ctx)
	defer stopWaiting()
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	ns, name := cur.GetNamespace(), cur.GetName()
	reportWait(parent, resource, ns+"/"+name)
	lw := cache.NewListWatchFromClient(client, resource, ns, fields.OneTermEqualSelector("metadata.name", name))
	_, err := watchtools.Until(ctx, cur.GetResourceVersion(), lw, onEvent(done))
	key := name
	if ns != "" {
		key = ns + "/" + name
	}
	return waitErr(parent, ctx, err, resource, key, timeout)
}

// onEvent asks done about each watch event's object (nil once it is deleted).
func onEvent(done func(obj runtime.Object) (bool, error)) watchtools.ConditionFunc {
	return func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Deleted:
			return done(nil)
		case watch.Added, watch.Modified:
			return done(ev.Object)
		case watch.Error:
			return false, apierrors.FromObject(ev.Object)
		}
		return false, nil
	}
}

// waitErr says why a wait ended: the caller's context, the timeout, or the watch.
// bindProgress is ctx with its reporter filling in the project and operation of reports that
// name none (the waits below): every report of a Volumes call names them, whoever calls it.
func bindProgress(ctx context.Context, projectID string, op engine.OpKind) context.Context {
	fn := engine.ProgressFrom(ctx)
	if fn == nil {
		return ctx
	}
	return engine.WithProgress(ctx, func(pr engine.Progress) {
		if pr.ProjectID == "" {
			pr.ProjectID = projectID
		}
		if pr.Op == "" {
			pr.Op = op
		}
		fn(pr)
	})
}

// reportWait tells the caller's progress reporter what a wait is for, before it begins.
func reportWait(ctx context.Context, resource, key string) {
	if report := engine.ProgressFrom(ctx); report != nil {
		report(engine.Progress{Phase: "waiting for " + strings.TrimSuffix(resource, "s") + " " + key})
	}
}

func waitErr(parent, ctx context.Context, err error, resource, key string, timeout time.Duration) error {
	switch {
	case err == nil:
		return nil
	case parent.Err() != nil:
		return fmt.Errorf("wait for %s %s: %w", resource, key, context.Cause(parent))
	case ctx.Err() != nil:
		return fmt.Errorf("wait for %s %s: %w after %s", resource, key, errWaitTimeout, timeout)
	}
	return fmt.Errorf("wait for %s %s: %w", resource, key, err)
}

// gone is a done func for waitFor: the object no longer exists.
func gone(obj runtime.Object) (bool, error) { return obj == nil, nil }

// managed reports whether obj was made by sailtui.
func managed(obj metav1.Object) bool { return obj.GetLabels()[LabelManagedBy] == ManagedBy }
