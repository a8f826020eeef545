package k8stest

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"github.com/sailtui/sailtui/backends/internal/testproc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"
)

// BinEnv, when set, is the directory holding etcd, kube-apiserver and kube-controller-manager
// (instead of .tools/bin in the repository).
const BinEnv = "SAILTUI_K8S_BIN"

// Version is the Kubernetes release the binaries are built from (the tool module's
// k8s.io/kubernetes) and the client libraries of the main module match.
const Version = "v1.34.3"

const (
	// startTimeout bounds each component's start. Ready takes about 3 s on an idle machine;
	// `make test` runs many test binaries at once on few cores, so allow much more.
	startTimeout = 2 * time.Minute
	stopTimeout  = 10 * time.Second
	// portAttempts: a port found free can be taken before the component binds it.
	portAttempts = 3
)

// controllers are the kube-controller-manager loops the backend relies on: namespace deletion,
// garbage collection of owned objects, Deployment → ReplicaSet → Pod, service-account tokens,
// and pvc-protection, without which the finalizer the StorageObjectInUseProtection admission
// plugin puts on every PVC would keep a deleted namespace Terminating for ever.
const controllers = "namespace,garbagecollector,deployment,replicaset,serviceaccount-token,serviceaccount,pvc-protection"

var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

// New starts a cluster; Stop it when done. Start is the usual way in tests.
func New() (c *Cluster, err error) {
	return newCluster(clusterOptions{})
}

// clusterOptions are what a real node's control plane needs beyond the tests' own.
type clusterOptions struct {
	dir         string   // the cluster's files; "" makes a temporary directory
	apiArgs     []string // more kube-apiserver flags
	controllers string   // kube-controller-manager --controllers; "" is controllers
}

func newCluster(opts clusterOptions) (c *Cluster, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*startTimeout)
	defer cancel()
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir := opts.dir
	if dir == "" {
		dir, err = os.MkdirTemp("", "sailtui-k8stest-")
	} else {
		err = os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return nil, fmt.Errorf("k8stest: %w", err)
	}
	c = &Cluster{dir: dir, opts: opts}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	if err := c.writeSecrets(); err != nil {
		return nil, err
	}
	etcdURL, err := c.startEtcd(ctx, bin)
	if err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, bin, etcdURL); err != nil {
		return nil, err
	}
	if err := c.startControllerManager(ctx, bin); err != nil {
		return nil, err
	}
	if err := c.installSnapshotCRDs(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Stop stops the components, last started first, and removes the cluster's files.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].stop())
	}
	c.procs = nil
	errs = append(errs, os.RemoveAll(c.dir))
	return errors.Join(errs...)
}

// String describes the cluster for failure messages.
func (c *Cluster) String() string {
	if c.config == nil {
		return "k8stest cluster in " + c.dir
	}
	return fmt.Sprintf("k8stest cluster at %s (kubeconfig %s, logs in %s)", c.config.Host, c.Kubeconfig, c.dir)
}

// Logs returns the end of each component's log, for failure messages.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, p := range c.procs {
		b.WriteString(p.tail())
		b.WriteString("\n")
	}
	return b.String()
}

func (c *Cluster) path(name string) string { return filepath.Join(c.dir, name) }

// findBin is $SAILTUI_K8S_BIN or the repository's .tools/bin, holding all three binaries.
func findBin() (string, error) {
	dir := os.Getenv(BinEnv)
	where := "$" + BinEnv + "=" + dir
	if dir == "" {
		root, err := testproc.RepoRoot()
		if err != nil {
			return "", fmt.Errorf("k8stest: find the repository's .tools/bin: %w\n%s", err, buildHint())
		}
		dir = filepath.Join(root, ".tools", "bin")
		where = dir
	}
	var missing []string
	for _, b := range binaries {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("k8stest: %s not found in %s; the Kubernetes tests need a real control plane.\n%s",
			strings.Join(missing, ", "), where, buildHint())
	}
	return dir, nil
}

// BuildCommand is the command that puts the binaries where Start looks for them, as `make
// tools` runs it: the -X flags stamp the release into /version, as Kubernetes' own build does.
func BuildCommand() string {
	root := "<repo>"
	if r, err := testproc.RepoRoot(); err == nil {
		root = r
	}
	ldflags := "-X k8s.io/component-base/version.gitVersion=" + Version +
		" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"
	return fmt.Sprintf("go -C %s build -ldflags '%s' -o %s/ ./etcd ./kube-apiserver ./kube-controller-manager",
		filepath.Join(root, "backends", "kubernetes", "controlplane", "tools"), ldflags, filepath.Join(root, ".tools", "bin"))
}

func buildHint() string {
	return "build them with `make tools` (about 6 min cold), or:\n  " + BuildCommand()
}

// writeSecrets writes the token file, the service-account signing key and the API server's
// serving certificate.
func (c *Cluster) writeSecrets() error {
	token, err := testproc.RandomHex(16)
	if err != nil {
		return err
	}
	if c.kcmToken, err = testproc.RandomHex(16); err != nil {
		return err
	}
	// The controller manager gets a user of its own, so the API server's logs and audit tell
	// its requests from the tests'. Both are cluster admins: the controllers then need none
	// of the RBAC a real cluster sets up for their service accounts.
	tokens := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,k8stest-controller-manager,k8stest-controller-manager,\"system:masters\"\n",
		token, c.kcmToken)
	if err := os.WriteFile(c.path("tokens.csv"), []byte(tokens), 0o600); err != nil {
		return fmt.Errorf("k8stest: %w", err)
	}
	// ECDSA: generating an RSA key would cost more than the rest of the setup.
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return fmt.Errorf("k8stest: service-account key: %w", err)
	}
	if err := os.WriteFile(c.path("sa.key"), saKey, 0o600); err != nil {
		return fmt.Errorf("k8stest: %w", err)
	}
	certPEM, keyPEM, err := servingCert()
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.path("apiserver.crt"), certPEM, 0o600); err != nil {
		return fmt.Errorf("k8stest: %w", err)
	}
	if err := os.WriteFile(c.path("apiserver.key"), keyPEM, 0o600); err != nil {
		return fmt.Errorf("k8stest: %w", err)
	}
	for _, d := range []string{"apiserver-certs", "kcm-certs"} {
		if err := os.Mkdir(c.path(d), 0o700); err != nil {
			return fmt.Errorf("k8stest: %w", err)
		}
	}
	c.config = &rest.Config{
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: certPEM},
		// client-go's default of 5 requests per second would make the tests wait on the
		// client, not on the server.
		QPS:   200,
		Burst: 400,
	}
	return nil
}

// servingCert is a self-signed certificate for 127.0.0.1 and localhost, which the kubeconfig
// trusts as its CA. Making it here rather than letting the API server generate one in its
// cert dir gives the CA data without reading it back from the server's files.
func servingCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("k8stest: serving key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "k8stest-apiserver"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("k8stest: serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("k8stest: serving key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// startEtcd starts a single-member etcd and returns its client URL.
func (c *Cluster) startEtcd(ctx context.Context, bin string) (string, error) {
	var url string
	err := retryPorts(func() error {
		client, err := testproc.FreePort()
		if err != nil {
			return fmt.Errorf("k8stest: etcd: %w", err)
		}
		peer, err := testproc.FreePort()
		if err != nil {
			return fmt.Errorf("k8stest: etcd: %w", err)
		}
		url = "http://127.0.0.1:" + strconv.Itoa(client)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
		// A member that failed to start may have left its peer URL in the data dir.
		if err := os.RemoveAll(c.path("etcd")); err != nil {
			return fmt.Errorf("k8stest: %w", err)
		}
		p, err := startProc(filepath.Join(bin, "etcd"), c.path("etcd.log"),
			"--name", "k8stest",
			"--data-dir", c.path("etcd"),
			"--listen-client-urls", url, "--advertise-client-urls", url,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "k8stest="+peerURL,
			// Durability is worthless for a throwaway cluster; speed is not.
			"--unsafe-no-fsync",
			"--log-level", "warn")
		if err != nil {
			return err
		}
		hc := &http.Client{Timeout: time.Second}
		err = p.waitReady(ctx, func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET /health: %s", resp.Status)
			}
			return nil
		})
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
		return nil
	})
	return url, err
}

func (c *Cluster) startAPIServer(ctx context.Context, bin, etcdURL string) error {
	return retryPorts(func() error {
		port, err := testproc.FreePort()
		if err != nil {
			return fmt.Errorf("k8stest: kube-apiserver: %w", err)
		}
		p, err := startProc(filepath.Join(bin, "kube-apiserver"), c.path("kube-apiserver.log"), append([]string{
			"--etcd-servers", etcdURL,
			"--bind-address", "127.0.0.1",
			"--advertise-address", "127.0.0.1",
			"--secure-port", strconv.Itoa(port),
			"--cert-dir", c.path("apiserver-certs"),
			"--tls-cert-file", c.path("apiserver.crt"),
			"--tls-private-key-file", c.path("apiserver.key"),
			"--token-auth-file", c.path("tokens.csv"),
			"--authorization-mode", "RBAC",
			"--service-account-issuer", "https://kubernetes.default.svc",
			"--service-account-key-file", c.path("sa.key"),
			"--service-account-signing-key-file", c.path("sa.key"),
			"--service-cluster-ip-range", ServiceCIDR,
			// The endpoints of the "kubernetes" Service would be the advertise address, and
			// a loopback address is not a valid endpoint: the reconciler would fail for ever.
			"--endpoint-reconciler-type", "none",
			"--profiling=false",
		}, c.opts.apiArgs...)...)
		if err != nil {
			return err
		}
		c.config.Host = "https://127.0.0.1:" + strconv.Itoa(port)
		if err := c.connect(); err != nil {
			_ = p.stop()
			return err
		}
		err = p.waitReady(ctx, func(ctx context.Context) error {
			_, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err
		})
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
		return nil
	})
}

// connect makes the admin clients and kubeconfig files for the API server at c.config.Host.
func (c *Cluster) connect() error {
	var err error
	if c.Client, err = kubernetes.NewForConfig(c.config); err != nil {
		return fmt.Errorf("k8stest: %w", err)
	}
	if c.Snapshots, err = snapclient.NewForConfig(c.config); err != nil {
		return fmt.Errorf("k8stest: %w", err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.config); err != nil {
		return fmt.Errorf("k8stest: %w", err)
	}
	return c.writeKubeconfigs()
}

func (c *Cluster) startControllerManager(ctx context.Context, bin string) error {
	p, err := startProc(filepath.Join(bin, "kube-controller-manager"), c.path("kube-controller-manager.log"),
		"--kubeconfig", c.path("kcm.kubeconfig"),
		"--controllers", cmp.Or(c.opts.controllers, controllers),
		"--service-account-private-key-file", c.path("sa.key"),
		"--root-ca-file", c.path("apiserver.crt"),
		"--leader-elect=false",
		// No HTTPS endpoint: nothing scrapes it, and it would be one more port to race for.
		"--secure-port", "0",
		"--cert-dir", c.path("kcm-certs"),
		"--profiling=false",
	)
	if err != nil {
		return err
	}
	// The service-account controller makes "default" in every namespace; once it has, the
	// controllers are running (their informers have synced), and pods can be created.
	if err := p.waitReady(ctx, func(ctx context.Context) error {
		_, err := c.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// writeKubeconfigs writes the tests' kubeconfig (admin) and the controller manager's.
func (c *Cluster) writeKubeconfigs() error {
	for _, kc := range []struct{ file, user, token string }{
		{"kubeconfig", "admin", c.config.BearerToken},
		{"kcm.kubeconfig", "k8stest-controller-manager", c.kcmToken},
	} {
		cfg := clientcmdapi.Config{
			Clusters: map[string]*clientcmdapi.Cluster{"k8stest": {
				Server:                   c.config.Host,
				CertificateAuthorityData: c.config.CAData,
			}},
			AuthInfos: map[string]*clientcmdapi.AuthInfo{kc.user: {Token: kc.token}},
			Contexts: map[string]*clientcmdapi.Context{"k8stest": {
				Cluster:  "k8stest",
				AuthInfo: kc.user,
			}},
			CurrentContext: "k8stest",
		}
		if err := clientcmd.WriteToFile(cfg, c.path(kc.file)); err != nil {
			return fmt.Errorf("k8stest: write %s: %w", kc.file, err)
		}
	}
	c.Kubeconfig = c.path("kubeconfig")
	return nil
}

// retryPorts runs start up to portAttempts times while it fails, as it does when another
// process took a port between freePort and the component binding it.
func retryPorts(start func() error) error {
	var err error
	for range portAttempts {
		if err = start(); err == nil {
			return nil
		}
		if !errors.Is(err, errExited) {
			return err
		}
	}
	return err
}
