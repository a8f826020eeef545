package kubernetes

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/sailtui/sailtui/backends/kubernetes/kubeclient"
)

// fakeAPI is an API server holding objs, for the runtime's tests that need no cluster: it
// serves reads only (an object by name, a list filtered by label selector) and fails the test
// on anything else, so a test never passes on a write it did not see.
func fakeAPI(t *testing.T, objs ...kruntime.Object) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet || req.URL.Query().Get("watch") == "true" {
			t.Errorf("fake API: %s %s: it serves reads only", req.Method, req.URL)
			http.Error(w, "reads only", http.StatusMethodNotAllowed)
			return
		}
		obj, err := readAPI(req, objs)
		if err != nil {
			t.Errorf("fake API: GET %s: %v", req.URL, err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if status, ok := obj.(*metav1.Status); ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(status.Code))
			_ = json.NewEncoder(w).Encode(status)
			return
		}
		gvks, _, err := kubeclient.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Errorf("fake API: GET %s: %v", req.URL, err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		data, err := kruntime.Encode(kubeclient.Codecs.LegacyCodec(gvks[0].GroupVersion()), obj)
		if err != nil {
			t.Errorf("fake API: GET %s: encode %T: %v", req.URL, obj, err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	// No client-side rate limit (client-go's default is 5 requests a second): the archive
	// tests' waits read many times a second, and this server has no load to spare.
	return &rest.Config{Host: srv.URL, QPS: -1}
}

// parseAPIPath splits /api/v1/namespaces/NS/RESOURCE/NAME (and the /apis/GROUP/VERSION/...,
// cluster-scoped and list forms).
func parseAPIPath(p string) (gv schema.GroupVersion, ns, resource, name string, ok bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gv, parts = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return gv, "", "", "", false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		ns, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 1:
		return gv, ns, parts[0], "", true
	case 2:
		return gv, ns, parts[0], parts[1], true
	}
	return gv, "", "", "", false
}

// kindOf is the kind of resource in gv ("" when the scheme has none): its plural is the kind
// with an s (es after an s), as it is for every kind these tests serve.
func kindOf(gv schema.GroupVersion, resource string) string {
	for gvk := range kubeclient.Scheme.AllKnownTypes() {
		plural := strings.ToLower(gvk.Kind) + "s"
		if strings.HasSuffix(gvk.Kind, "s") {
			plural = strings.ToLower(gvk.Kind) + "es"
		}
		if gvk.GroupVersion() == gv && plural == resource {
			return gvk.Kind
		}
	}
	return ""
}

// readAPI answers the GET req from objs: the object named, a list (filtered by the request's
// label selector), or a NotFound Status.
func readAPI(req *http.Request, objs []kruntime.Object) (kruntime.Object, error) {
	gv, ns, resource, name, ok := parseAPIPath(req.URL.Path)
	kind := kindOf(gv, resource)
	if !ok || kind == "" {
		return nil, errors.New("not a resource the fake API knows")
	}
	sel, err := labels.Parse(req.URL.Query().Get("labelSelector"))
	if err != nil {
		return nil, err
	}
	var items []kruntime.Object
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		gvks, _, err := kubeclient.Scheme.ObjectKinds(obj)
		if err != nil {
			return nil, err
		}
		if gvks[0] != gv.WithKind(kind) || (ns != "" && m.GetNamespace() != ns) {
			continue
		}
		if name != "" && m.GetName() == name {
			return obj, nil
		}
		if name == "" && sel.Matches(labels.Set(m.GetLabels())) {
			items = append(items, obj)
		}
	}
	if name != "" {
		status := apierrors.NewNotFound(schema.GroupResource{Group: gv.Group, Resource: resource}, name).ErrStatus
		status.APIVersion, status.Kind = "v1", "Status"
		return &status, nil
	}
	list, err := kubeclient.Scheme.New(gv.WithKind(kind + "List"))
	if err != nil {
		return nil, err
	}
	return list, meta.SetList(list, items)
}
