// Command kube-network-policies is the real node's NetworkPolicy enforcer (issue 32): the
// controller of sigs.k8s.io/kube-network-policies, which gives the first packet of every
// connection a verdict in user space from the policies of its two ends, run out of cluster.
// Upstream's own main reads only the in-cluster config, stops only on SIGINT and cannot turn
// NRI off, so this one is a main of our own around the same controller. A module of its own:
// the enforcer pins client-go 0.32, which must not move the main module's nor the control
// plane's.
//
// The packets reach it through an NFQUEUE the node harness installs (k8stest, node_netpol.go):
// this kernel has no nft queue expression, so the enforcer's own nftables rules are rejected
// and it only logs that, while the harness's iptables hook feeds its queue.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	node := flag.String("node-name", "", "name of the Node whose pods' packets are judged")
	queue := flag.Int("nfqueue-id", 100, "the NFQUEUE the packets come through")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" || *node == "" {
		fmt.Fprintln(os.Stderr, "usage: kube-network-policies --kubeconfig FILE --node-name NODE [--nfqueue-id N]")
		os.Exit(2)
	}
	if err := run(*kubeconfig, *node, *queue); err != nil {
		fmt.Fprintln(os.Stderr, "kube-network-policies:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, node string, queue int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	// NRI off, without Config.NRIdisabled: with it, v0.8.0 leaves its NRI plugin nil and
	// panics on the first packet to an address that is no pod's (the node, a metadata
	// address). A plugin whose socket is this invalid descriptor fails to connect at once
	// and answers every lookup with nothing, and it never dials the host's
	// /var/run/nri/nri.sock, another containerd's.
	if err := os.Setenv("NRI_PLUGIN_SOCKET", "none"); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl, err := networkpolicy.NewController(client,
		factory.Networking().V1().NetworkPolicies(),
		factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(),
		nil, nil, nil, nil, // no (Baseline)AdminNetworkPolicy
		networkpolicy.Config{
			QueueID:  queue,
			NodeName: node,
			// Fail closed: with nobody reading the queue its packets are dropped.
			FailOpen: false,
			// Kernels from 6.12 have the conntrack fix this works around, and its
			// prerouting rules need the nft queue expression this kernel lacks anyway.
			NetfilterBug1766Fix: false,
		})
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	factory.Start(ctx.Done())
	err = ctrl.Run(ctx)
	factory.Shutdown()
	if ctx.Err() != nil {
		return nil
	}
	return err
}
