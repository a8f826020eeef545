package main

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/sailtui/sailtui/backends/kubernetes"
	"github.com/sailtui/sailtui/backends/kubernetes/deploy"
	"github.com/sailtui/sailtui/engine"
)

// manifestsCmd prints what a cluster needs to run the headless sweeps as CronJobs. It touches
// no state: the YAML comes from the generator in backends/kubernetes/deploy.
func manifestsCmd() *cobra.Command {
	o := deploy.Options{Image: defaultImage()}
	cmd := &cobra.Command{
		Use:   "manifests",
		Short: "Print the Kubernetes manifests of the headless sweeps (CronJobs, ServiceAccount, least-privilege RBAC)",
		Long: `Print the YAML that runs the headless sweeps in a cluster: the namespace, the sweeper's
ServiceAccount, its RBAC (cluster-wide only what has no namespace; everything inside a project is
a ClusterRole the runtime binds in each project namespace), a ValidatingAdmissionPolicy that lets
the sweeper delete only namespaces and change only VolumeSnapshotContents that are sailtui's
(RBAC cannot narrow those by label), the hibernation CronJob (every 2 minutes) and the purge
CronJob (daily, 03:00 UTC).

Configuration comes from a ConfigMap and a Secret that are referenced, not created: put the
settings (APP_DOMAIN, S3_BUCKET_NAME, ...) in the ConfigMap and DATABASE_URL and the AWS
credentials in the Secret. Create the namespace, the ConfigMap and the Secret first.

With --namespace, tell the runtime that creates project namespaces where the sweeper lives:
K8S_SWEEPER_SERVICE_ACCOUNT=<namespace>/sailtui-sweeper.`,
		Example: `  sailtui manifests | kubectl apply -f -
  sailtui manifests --namespace ops --image registry.example.com/sailtui:1.2.0 --s3-snapshots
  kubectl -n sailtui-system create secret generic sailtui-secrets --from-literal=DATABASE_URL=...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Image == "" {
				// A CronJob on :latest runs whatever was pushed last, a different sailtui from
				// one run to the next.
				return fmt.Errorf("this sailtui is a development build (version %s), with no release version to name its image by: "+
					"give the image the CronJobs run with --image (e.g. --image registry.example.com/sailtui:1.2.0): %w", version, engine.ErrBadInput)
			}
			b, err := deploy.YAML(o)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Namespace, "namespace", kubernetes.SweeperNamespace, "namespace of the ServiceAccount and the CronJobs")
	fs.StringVar(&o.Image, "image", o.Image, "the sailtui image the CronJobs run (default: this release's sailtui:<version>; required for a development build, make build's too)")
	fs.BoolVar(&o.S3Snapshots, "s3-snapshots", false, "no CSI snapshot class (K8S_USE_S3_SNAPSHOTS=true): grant pods/exec in project namespaces for the S3 sandwich")
	fs.StringVar(&o.ConfigMap, "config-map", deploy.DefaultConfigMap, "ConfigMap the sweeps take their settings from (envFrom; not created)")
	fs.StringVar(&o.Secret, "secret", deploy.DefaultSecret, "Secret with DATABASE_URL and AWS credentials (envFrom; not created)")
	fs.StringVar(&o.TLSSecret, "tls-secret", "", "namespace/name of the wildcard TLS secret copied into project namespaces (K8S_COPY_TLS_SECRET_FROM): adds a Role that reads only it, for whoever creates projects")
	fs.StringVar(&o.PullSecret, "pull-secret", "", "namespace/name of the image pull secret copied into project namespaces (K8S_COPY_PULL_SECRET_FROM): adds a Role that reads only it, for whoever creates projects")
	fs.StringVar(&o.NamespacePrefix, "namespace-prefix", "proj-", "K8S_NAMESPACE_PREFIX of the projects: the sweeper may change the snapshot contents of their VolumeSnapshots")
	return cmd
}

// releaseVersion is what a release is stamped with: a version number (1.2.0, v1.2.0-rc.1).
// make build stamps `git describe` (a commit, e0c1a2f-dirty, v1.2.0-3-ge0c1a2f): a
// development build, whose sailtui:<version> image nothing builds or publishes.
var releaseVersion = regexp.MustCompile(`^v?\d+\.\d+\.\d+(-(rc|alpha|beta)(\.?\d+)?)?$`)

// defaultImage is the image of this build: a release's version tag; "" for a development
// build, which must be told (never :latest).
func defaultImage() string {
	if !releaseVersion.MatchString(version) {
		return ""
	}
	return "sailtui:" + version
}
