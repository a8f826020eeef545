package kubeclient_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/sailtui/sailtui/backends/kubernetes/kubeclient"
)

// request is what the fake server saw of one request.
type request struct {
	method, path, accept, contentType, userAgent string
	query                                        url.Values
	body                                         []byte
}

// apiServer answers each request with answer and records it.
type apiServer struct {
	t    *testing.T
	mu   sync.Mutex
	seen []request
}

func (s *apiServer) last() request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		s.t.Fatal("no request reached the server")
	}
	return s.seen[len(s.seen)-1]
}

func newAPIServer(t *testing.T, answer func(w http.ResponseWriter, r request)) (*apiServer, *kubeclient.Clientset) {
	t.Helper()
	s := &apiServer{t: t}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		body, _ := io.ReadAll(hr.Body)
		r := request{method: hr.Method, path: hr.URL.Path, query: hr.URL.Query(), body: body,
			accept: hr.Header.Get("Accept"), contentType: hr.Header.Get("Content-Type"), userAgent: hr.Header.Get("User-Agent")}
		s.mu.Lock()
		s.seen = append(s.seen, r)
		s.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := kubeclient.New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// writeJSON writes v as the server's JSON answer, with its apiVersion and kind.
func writeJSON(t *testing.T, w http.ResponseWriter, code int, v any) {
	t.Helper()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		t.Error(err)
	}
}

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns1", ResourceVersion: rv, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "dev", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning}}
}

// Get, List, Create and Patch of a pod go to the core group's paths with their options in the
// query, and what the server answers decodes into the typed objects.
func TestPodsRoundTrip(t *testing.T) {
	s, c := newAPIServer(t, func(w http.ResponseWriter, r request) {
		switch {
		case r.method == http.MethodGet && r.path == "/api/v1/namespaces/ns1/pods/p1":
			writeJSON(t, w, http.StatusOK, pod("p1", "7"))
		case r.method == http.MethodGet && r.path == "/api/v1/namespaces/ns1/pods":
			writeJSON(t, w, http.StatusOK, &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
				ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []corev1.Pod{*pod("p1", "7"), *pod("p2", "8")}})
		case r.method == http.MethodPost && r.path == "/api/v1/namespaces/ns1/pods":
			// The body is in the request's content type (protobuf, as client-go's pods
			// client sends it): the scheme's decoder reads either.
			obj, _, err := kubeclient.Codecs.UniversalDeserializer().Decode(r.body, nil, nil)
			in, ok := obj.(*corev1.Pod)
			if err != nil || !ok {
				t.Errorf("create body (%s): %T %v", r.contentType, obj, err)
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			in.ResourceVersion = "10"
			in.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
			writeJSON(t, w, http.StatusCreated, in)
		case r.method == http.MethodPatch && r.path == "/api/v1/namespaces/ns1/pods/p1":
			writeJSON(t, w, http.StatusOK, pod("p1", "11"))
		case r.method == http.MethodDelete && (r.path == "/api/v1/namespaces/ns1/pods/p1" || r.path == "/api/v1/namespaces/ns1/pods"):
			writeJSON(t, w, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess})
		case r.path == "/api/v1/namespaces/ns1/pods/gone":
			writeJSON(t, w, http.StatusNotFound, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
				Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: `pods "gone" not found`})
		default:
			t.Errorf("unexpected %s %s", r.method, r.path)
			http.NotFound(w, nil)
		}
	})
	ctx := t.Context()
	pods := c.CoreV1().Pods("ns1")

	got, err := pods.Get(ctx, "p1", metav1.GetOptions{ResourceVersion: "3"})
	if err != nil || got.Name != "p1" || got.ResourceVersion != "7" || got.Spec.Containers[0].Image != "busybox" || got.Status.Phase != corev1.PodRunning {
		t.Fatalf("get: %+v %v", got, err)
	}
	r := s.last()
	if r.query.Get("resourceVersion") != "3" {
		t.Errorf("get query %v, want resourceVersion=3", r.query)
	}
	// client-go's typed clients ask for protobuf first for built-in types; so do these.
	if !strings.HasPrefix(r.accept, "application/vnd.kubernetes.protobuf") || !strings.Contains(r.accept, "application/json") {
		t.Errorf("get Accept %q, want protobuf then JSON", r.accept)
	}
	if r.userAgent != rest.DefaultKubernetesUserAgent() {
		t.Errorf("User-Agent %q, want client-go's default %q", r.userAgent, rest.DefaultKubernetesUserAgent())
	}

	limit := int64(50)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "metadata.name=p1", ResourceVersion: "5", Limit: limit})
	if err != nil || len(list.Items) != 2 || list.Items[1].Name != "p2" || list.ResourceVersion != "9" {
		t.Fatalf("list: %+v %v", list, err)
	}
	q := s.last().query
	if q.Get("labelSelector") != "app=web" || q.Get("fieldSelector") != "metadata.name=p1" || q.Get("resourceVersion") != "5" || q.Get("limit") != "50" {
		t.Errorf("list query %v", q)
	}

	created, err := pods.Create(ctx, pod("p3", ""), metav1.CreateOptions{FieldManager: "sailtui"})
	if err != nil || created.Name != "p3" || created.ResourceVersion != "10" || created.Spec.Containers[0].Name != "dev" {
		t.Fatalf("create: %+v %v", created, err)
	}
	if r := s.last(); r.query.Get("fieldManager") != "sailtui" || r.contentType != "application/vnd.kubernetes.protobuf" {
		t.Errorf("create query %v, content type %q", r.query, r.contentType)
	}

	force := true
	patched, err := pods.Patch(ctx, "p1", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"}}`),
		metav1.PatchOptions{FieldManager: "sailtui", Force: &force})
	if err != nil || patched.ResourceVersion != "11" {
		t.Fatalf("patch: %+v %v", patched, err)
	}
	if r := s.last(); r.contentType != string(types.ApplyPatchType) || r.query.Get("fieldManager") != "sailtui" || r.query.Get("force") != "true" {
		t.Errorf("patch content type %q, query %v", r.contentType, r.query)
	}

	grace := int64(0)
	if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if opts := deleteOptions(t, s.last()); opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
		t.Errorf("delete options %+v", opts)
	}
	background := metav1.DeletePropagationBackground
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{LabelSelector: "app=web"}); err != nil {
		t.Fatalf("delete collection: %v", err)
	}
	r = s.last()
	if opts := deleteOptions(t, r); opts.PropagationPolicy == nil || *opts.PropagationPolicy != background || r.query.Get("labelSelector") != "app=web" {
		t.Errorf("delete collection: options %+v, query %v", opts, r.query)
	}

	if _, err := pods.Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of a missing pod: %v, want NotFound", err)
	}
}

// deleteOptions decodes a delete's body: DeleteOptions in the request's content type.
func deleteOptions(t *testing.T, r request) *metav1.DeleteOptions {
	t.Helper()
	obj, _, err := kubeclient.Codecs.UniversalDeserializer().Decode(r.body, nil, nil)
	opts, ok := obj.(*metav1.DeleteOptions)
	if err != nil || !ok {
		t.Fatalf("delete body (%s): %T %v", r.contentType, obj, err)
	}
	return opts
}

// A watch streams typed events, with the list options in its query.
func TestPodsWatch(t *testing.T) {
	s, c := newAPIServer(t, func(w http.ResponseWriter, r request) {
		if r.path != "/api/v1/namespaces/ns1/pods" || r.query.Get("watch") != "true" {
			t.Errorf("unexpected %s %s?%s", r.method, r.path, r.query.Encode())
			http.NotFound(w, nil)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		for _, ev := range []metav1.WatchEvent{
			{Type: string(watch.Added), Object: rawObject(t, pod("p1", "12"))},
			{Type: string(watch.Modified), Object: rawObject(t, pod("p1", "13"))},
			{Type: string(watch.Deleted), Object: rawObject(t, pod("p1", "14"))},
		} {
			if err := enc.Encode(&ev); err != nil {
				t.Error(err)
			}
			w.(http.Flusher).Flush()
		}
	})
	w, err := c.CoreV1().Pods("ns1").Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=p1", ResourceVersion: "11"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("event %s carries %T, want *corev1.Pod", ev.Type, ev.Object)
		}
		got = append(got, string(ev.Type)+" "+p.Name+"@"+p.ResourceVersion)
	}
	if strings.Join(got, ", ") != "ADDED p1@12, MODIFIED p1@13, DELETED p1@14" {
		t.Errorf("events %q", got)
	}
	if q := s.last().query; q.Get("fieldSelector") != "metadata.name=p1" || q.Get("resourceVersion") != "11" {
		t.Errorf("watch query %v", q)
	}
}

func rawObject(t *testing.T, v any) kruntime.RawExtension {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Error(err)
	}
	return kruntime.RawExtension{Raw: data}
}

// The log request carries its options; the other groups go to their own paths, the snapshot
// group (custom resources) as JSON only; raw requests go to the path given.
func TestLogsAndOtherGroups(t *testing.T) {
	s, c := newAPIServer(t, func(w http.ResponseWriter, r request) {
		switch r.path {
		case "/api/v1/namespaces/ns1/pods/p1/log":
			_, _ = io.WriteString(w, "line 1\nline 2\n")
		case "/apis/apps/v1/namespaces/ns1/deployments/web":
			writeJSON(t, w, http.StatusOK, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns1"}})
		case "/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents":
			ready := true
			writeJSON(t, w, http.StatusOK, &snapv1.VolumeSnapshotContentList{
				TypeMeta: metav1.TypeMeta{APIVersion: "snapshot.storage.k8s.io/v1", Kind: "VolumeSnapshotContentList"},
				Items: []snapv1.VolumeSnapshotContent{{ObjectMeta: metav1.ObjectMeta{Name: "c1"},
					Status: &snapv1.VolumeSnapshotContentStatus{ReadyToUse: &ready}}}})
		case "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews":
			obj, _, err := kubeclient.Codecs.UniversalDeserializer().Decode(r.body, nil, nil)
			review, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
			if err != nil || !ok {
				t.Errorf("review body (%s): %T %v", r.contentType, obj, err)
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			review.TypeMeta = metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"}
			review.Status.Allowed = review.Spec.ResourceAttributes.Verb == "get"
			writeJSON(t, w, http.StatusCreated, review)
		case "/version":
			writeJSON(t, w, http.StatusOK, map[string]string{"gitVersion": "v1.34.3"})
		default:
			writeJSON(t, w, http.StatusNotFound, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
				Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound})
		}
	})
	ctx := t.Context()

	tail := int64(5)
	logs, err := c.CoreV1().Pods("ns1").GetLogs("p1", &corev1.PodLogOptions{Container: "dev", TailLines: &tail, Timestamps: true}).DoRaw(ctx)
	if err != nil || string(logs) != "line 1\nline 2\n" {
		t.Fatalf("logs: %q %v", logs, err)
	}
	if q := s.last().query; q.Get("container") != "dev" || q.Get("tailLines") != "5" || q.Get("timestamps") != "true" || q.Has("follow") {
		t.Errorf("log query %v", q)
	}

	if d, err := c.AppsV1().Deployments("ns1").Get(ctx, "web", metav1.GetOptions{}); err != nil || d.Name != "web" {
		t.Fatalf("deployment: %+v %v", d, err)
	}

	review, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}},
		metav1.CreateOptions{})
	if err != nil || !review.Status.Allowed {
		t.Fatalf("access review: %+v %v", review, err)
	}

	contents, err := c.SnapshotV1().VolumeSnapshotContents().List(ctx, metav1.ListOptions{LabelSelector: "tesslate.io/project-id=p1"})
	if err != nil || len(contents.Items) != 1 || contents.Items[0].Name != "c1" || !*contents.Items[0].Status.ReadyToUse {
		t.Fatalf("snapshot contents: %+v %v", contents, err)
	}
	if r := s.last(); strings.Contains(r.accept, "protobuf") || r.query.Get("labelSelector") != "tesslate.io/project-id=p1" {
		t.Errorf("snapshot list: Accept %q, query %v", r.accept, r.query)
	}

	if v, err := c.Raw().Get().AbsPath("/version").DoRaw(ctx); err != nil || !strings.Contains(string(v), "v1.34.3") {
		t.Errorf("raw /version: %s %v", v, err)
	}
	if _, err := c.Raw().Get().AbsPath("/apis/metrics.k8s.io/v1beta1").DoRaw(ctx); !apierrors.IsNotFound(err) {
		t.Errorf("raw GET of a missing API: %v, want NotFound", err)
	}
}
