package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/sailtui/sailtui/backends/kubernetes/deploy"
)

// `sailtui manifests` prints what the generator gives for its flags, the YAML decodes into
// Kubernetes objects, and the command touches no state.
func TestManifestsCommand(t *testing.T) {
	c := newCLI(t)
	c.state = filepath.Join(t.TempDir(), "never-created")
	cases := []struct {
		args []string
		opts deploy.Options
	}{
		{[]string{"--image", "sailtui:1.0.0"}, deploy.Options{Image: "sailtui:1.0.0"}},
		{[]string{"--namespace", "ops", "--image", "registry.example.com/sailtui:1.2.3", "--s3-snapshots", "--config-map", "cm", "--secret", "sec"},
			deploy.Options{Namespace: "ops", Image: "registry.example.com/sailtui:1.2.3", S3Snapshots: true, ConfigMap: "cm", Secret: "sec"}},
	}
	for _, tc := range cases {
		out := c.ok(append([]string{"manifests"}, tc.args...)...)
		want, err := deploy.YAML(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Fatalf("sailtui manifests %v differs from the generator:\n%s", tc.args, out)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
		kinds := map[string]int{}
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("a document does not decode: %v\n%s", err, doc)
			}
			kinds[gvk.Kind]++
			if cj, ok := obj.(*batchv1.CronJob); ok {
				if ns := cj.Namespace; ns != tc.opts.Namespace && !(tc.opts.Namespace == "" && ns == "sailtui-system") {
					t.Errorf("cron job in %s", ns)
				}
			}
		}
		if kinds["CronJob"] != 2 || kinds["ClusterRole"] != 2 || kinds["ServiceAccount"] != 1 {
			t.Fatalf("objects %v", kinds)
		}
		if s3 := bytes.Contains([]byte(out), []byte("pods/exec")); s3 != tc.opts.S3Snapshots {
			t.Errorf("pods/exec granted: %v, want %v", s3, tc.opts.S3Snapshots)
		}
	}
	// A development build (this test binary is one) has no version to name its image by: the
	// image must be given, and the CronJobs never run :latest.
	r := c.run("manifests")
	if r.code != 2 || !strings.Contains(r.stderr, "--image") || strings.Contains(r.stdout, ":latest") {
		t.Fatalf("manifests without --image on a development build: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = c.run("manifests", "--image", "sailtui:1.0.0", "--namespace", "Not_A_Name")
	if r.code != 2 || !strings.Contains(r.stderr, "Not_A_Name") {
		t.Fatalf("bad namespace: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(c.state); !os.IsNotExist(err) {
		t.Fatalf("manifests touched the state directory: %v", err)
	}
}
