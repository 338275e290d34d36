// Command kube-harness runs etcd, kube-apiserver and kube-controller-manager on loopback for tests and for people.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"wasm-reconciler/tests/kube/internal/cluster"
)

const usage = `kube-harness runs a real Kubernetes control plane on 127.0.0.1, and with --node a node that runs pods.

Usage:
  kube-harness up --dir DIR [--port P] [flags]
  kube-harness up --dir DIR --node [--registry-dir DIR2] [flags]

When the control plane is ready it prints one line on standard output:
  ready kubeconfig=DIR/kubeconfig server=https://127.0.0.1:P ca=DIR/pki/ca.crt logs=DIR/logs
and with --node, once the node is Ready:
  ready kubeconfig=… server=… ca=… logs=… node=kube-harness-node [registry=127.0.0.1:R]
It runs until SIGTERM or SIGINT, then stops the components in reverse order and exits 0 (1 if a component had to
be killed, failed to start or exited by itself). Its own log goes to standard error and
DIR/logs/kube-harness.log; each component logs to DIR/logs/<component>.log.

With --node everything runs in a network namespace of its own (/run/netns/kh-<id>), reached from here only
through the forwarded ports of the ready line; see docs/real-cluster.md.

Flags of up:
`

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if len(os.Args) < 2 || os.Args[1] != "up" {
		fmt.Fprint(os.Stderr, usage)
		upFlags(&options{}).PrintDefaults()
		if len(os.Args) >= 2 && (os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help") {
			os.Exit(0)
		}
		os.Exit(2)
	}
	opts := &options{}
	flags := upFlags(opts)
	if err := flags.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	if opts.dir == "" {
		fmt.Fprintln(os.Stderr, "kube-harness up: --dir is required")
		os.Exit(2)
	}
	if !opts.node && (opts.registryDir != "" || len(opts.kubeletArgs)+len(opts.proxyArgs)+len(opts.schedulerArgs) > 0) {
		fmt.Fprintln(os.Stderr, "kube-harness up: --registry-dir and the node's flags need --node")
		os.Exit(2)
	}
	os.Exit(up(opts))
}

type options struct {
	dir, binDir, controllers                       string
	port                                           int
	fresh, etcdFsync                               bool
	timeout                                        time.Duration
	etcdArgs, apiServerArgs, controllerManagerArgs listFlag

	node                                  bool
	registryDir, imagesDir, cniBinDir     string
	registryPort                          int
	schedulerArgs, kubeletArgs, proxyArgs listFlag
}

func upFlags(opts *options) *flag.FlagSet {
	flags := flag.NewFlagSet("up", flag.ContinueOnError)
	flags.StringVar(&opts.dir, "dir", "", "directory for the PKI, etcd's data, the kubeconfig and the logs (required)")
	flags.IntVar(&opts.port, "port", 0, "the API server's port on 127.0.0.1 (0: a free port)")
	flags.StringVar(&opts.binDir, "bin-dir", "", "directory with etcd, kube-apiserver and kube-controller-manager (default: this binary's)")
	flags.StringVar(&opts.controllers, "controllers", "",
		"kube-controller-manager --controllers list (default: "+strings.Join(cluster.DefaultControllers, ",")+
			"; with --node: *)")
	flags.BoolVar(&opts.fresh, "fresh", false,
		"forget the PKI and etcd's data of an earlier run in DIR (with --node also the node's images, pods and files)")
	flags.BoolVar(&opts.etcdFsync, "etcd-fsync", false, "let etcd fsync its writes (off: faster, data is disposable)")
	flags.DurationVar(&opts.timeout, "timeout", 2*time.Minute, "how long each component may take to become ready")
	flags.Var(&opts.etcdArgs, "etcd-arg", "extra etcd flag, e.g. --etcd-arg=--quota-backend-bytes=4294967296 (repeatable)")
	flags.Var(&opts.apiServerArgs, "apiserver-arg", "extra kube-apiserver flag, e.g. --apiserver-arg=--v=4 (repeatable)")
	flags.Var(&opts.controllerManagerArgs, "controller-manager-arg", "extra kube-controller-manager flag (repeatable)")
	flags.BoolVar(&opts.node, "node", false,
		"also run a node (kube-scheduler, containerd, kubelet, kube-proxy), all in a network namespace of its own")
	flags.StringVar(&opts.registryDir, "registry-dir", "", "with --node: run a registry with its storage here, "+
		"reachable by pods as localhost:5000, with the pause and busybox images")
	flags.IntVar(&opts.registryPort, "registry-port", 0,
		"with --registry-dir: the registry's port on 127.0.0.1 (0: a free port)")
	flags.StringVar(&opts.imagesDir, "images-dir", "",
		"with --node: the OCI layouts pause/ and busybox/ (default: BIN-DIR/../images)")
	flags.StringVar(&opts.cniBinDir, "cni-bin-dir", "/usr/lib/cni",
		"with --node: the CNI plugins (bridge, host-local, portmap)")
	flags.Var(&opts.schedulerArgs, "scheduler-arg", "with --node: extra kube-scheduler flag (repeatable)")
	flags.Var(&opts.kubeletArgs, "kubelet-arg", "with --node: extra kubelet flag (repeatable)")
	flags.Var(&opts.proxyArgs, "proxy-arg", "with --node: extra kube-proxy flag (repeatable)")
	return flags
}

func up(opts *options) int {
	binDir := opts.binDir
	if binDir == "" {
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "kube-harness: locating this binary:", err)
			return 1
		}
		binDir = filepath.Dir(self)
	}
	// The lock comes first: a refused second launcher must not truncate the running one's log.
	lock, err := cluster.LockDir(opts.dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-harness:", err)
		return 1
	}
	defer lock.Close()
	logger, closeLog, err := newLogger(opts.dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-harness:", err)
		return 1
	}
	defer closeLog()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-signals
		logger.Info("stopping", "signal", sig.String())
		cancel()
	}()

	var node *cluster.NodeConfig
	if opts.node {
		imagesDir := opts.imagesDir
		if imagesDir == "" {
			imagesDir = filepath.Join(filepath.Dir(binDir), "images")
		}
		node = &cluster.NodeConfig{
			RegistryDir:        opts.registryDir,
			RegistryPort:       opts.registryPort,
			ImagesDir:          imagesDir,
			CNIBinDir:          opts.cniBinDir,
			ExtraSchedulerArgs: opts.schedulerArgs,
			ExtraKubeletArgs:   opts.kubeletArgs,
			ExtraProxyArgs:     opts.proxyArgs,
		}
	}
	started := time.Now()
	running, err := cluster.Start(ctx, cluster.Config{
		Dir:                        opts.dir,
		BinDir:                     binDir,
		APIServerPort:              opts.port,
		Controllers:                splitList(opts.controllers),
		Fresh:                      opts.fresh,
		EtcdFsync:                  opts.etcdFsync,
		ExtraEtcdArgs:              opts.etcdArgs,
		ExtraAPIServerArgs:         opts.apiServerArgs,
		ExtraControllerManagerArgs: opts.controllerManagerArgs,
		Timeout:                    opts.timeout,
		Logger:                     logger,
		Node:                       node,
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			logger.Info("stopped before the control plane was ready")
			return 0
		}
		logger.Error("the control plane did not start", "error", err)
		return 1
	}
	logger.Info("ready", "server", running.Server(), "kubeconfig", running.Kubeconfig(),
		"took", time.Since(started).Round(time.Millisecond))
	line := fmt.Sprintf("ready kubeconfig=%s server=%s ca=%s logs=%s", running.Kubeconfig(), running.Server(),
		running.CACert(), running.LogsDir())
	if name := running.NodeName(); name != "" {
		line += " node=" + name
	}
	if registry := running.RegistryAddress(); registry != "" {
		line += " registry=" + registry
	}
	fmt.Println(line)

	status := 0
	select {
	case <-ctx.Done():
	case err := <-running.Exited():
		logger.Error("a component exited by itself; stopping the others", "error", err)
		status = 1
	}
	if err := running.Stop(); err != nil {
		logger.Error("stopping", "error", err)
		status = 1
	}
	return status
}

// newLogger logs text lines to standard error and to DIR/logs/kube-harness.log.
func newLogger(dir string) (*slog.Logger, func(), error) {
	logs := filepath.Join(dir, cluster.LogsDir)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating %s: %w", logs, err)
	}
	file, err := os.OpenFile(filepath.Join(logs, "kube-harness.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the launcher's log: %w", err)
	}
	handler := slog.NewTextHandler(io.MultiWriter(os.Stderr, file), nil)
	return slog.New(handler), func() { _ = file.Close() }, nil
}

func splitList(list string) []string {
	var items []string
	for item := range strings.SplitSeq(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
