package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"wasm-reconciler/tests/kube/internal/kubeconfig"
	"wasm-reconciler/tests/kube/internal/pki"
)

// Layout of the launcher's directory.
const (
	PKIDir     = "pki"
	EtcdDir    = "etcd"
	LogsDir    = "logs"
	Kubeconfig = "kubeconfig"
	// controllerManagerKubeconfig is the controller manager's own client configuration.
	controllerManagerKubeconfig = "controller-manager.kubeconfig"
	lockFile                    = ".kube-harness.lock"
)

// Network settings. The service CIDR only feeds ClusterIP allocation: no traffic is ever sent to it.
const (
	ServiceCIDR = "10.96.0.0/16"
	// ServiceAccountIssuer is the `iss` of every service-account token the API server signs.
	ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
)

// DefaultControllers are the kube-controller-manager controllers that run: everything that manages API objects
// without creating pods. Workload controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
// ReplicationController, HPA) stay off, so a test can play them by writing status itself as it does against the
// embedded API server, and nothing waits for a kubelet that is not there.
var DefaultControllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"legacy-serviceaccount-token-cleaner-controller",
	"root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
	"resourcequota-controller",
	"endpoints-controller",
	"endpointslice-controller",
	"endpointslice-mirroring-controller",
	"service-cidr-controller",
	"validatingadmissionpolicy-status-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	"pod-garbage-collector-controller",
}

// Config says where the control plane lives and how it runs.
type Config struct {
	// Dir holds the PKI, etcd's data, the logs and the kubeconfig.
	Dir string
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	BinDir string
	// APIServerPort is the API server's port on 127.0.0.1; 0 picks a free one.
	APIServerPort int
	// Controllers run in kube-controller-manager (its --controllers list).
	Controllers []string
	// Fresh removes the PKI and etcd's data from an earlier run first.
	Fresh bool
	// EtcdFsync keeps etcd's fsync; off by default, since the data is disposable and fsync dominates write latency.
	EtcdFsync bool
	// ExtraEtcdArgs, ExtraAPIServerArgs and ExtraControllerManagerArgs are appended to each component's flags.
	ExtraEtcdArgs, ExtraAPIServerArgs, ExtraControllerManagerArgs []string
	// Timeout bounds the wait for each component to become ready.
	Timeout time.Duration
	Logger  *slog.Logger
	// Node, when set, runs the whole cluster in a network namespace of its own with a node: kube-scheduler,
	// containerd, the kubelet and kube-proxy (node.go).
	Node *NodeConfig
}

// Cluster is a running control plane.
type Cluster struct {
	config     Config
	server     string
	kubeconfig string
	pki        pki.Set
	// internalServer is the API server's URL for the other components: server, except on a node, where they
	// reach it inside the node's network namespace.
	internalServer string
	// env is the components' environment (nil: the launcher's).
	env []string
	// processes in start order; stopped in reverse.
	processes []*process
	// node is the node's state; nil without one.
	node *nodeState
}

// Server is the API server's URL.
func (c *Cluster) Server() string { return c.server }

// Kubeconfig is the path of the admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// CACert is the path of the CA certificate that signed the API server's serving certificate.
func (c *Cluster) CACert() string { return c.pki.Path(pki.CACert) }

// LogsDir is the directory with one log file per component.
func (c *Cluster) LogsDir() string { return filepath.Join(c.config.Dir, LogsDir) }

// Start brings up etcd, kube-apiserver and kube-controller-manager and returns once the API server is ready, the
// RBAC bootstrap policy is in place and the controller manager serves (the `default` ServiceAccount exists). On
// error, whatever was started has been stopped. The caller holds LockDir(config.Dir).
func Start(ctx context.Context, config Config) (*Cluster, error) {
	if config.Node != nil {
		return startNode(ctx, config)
	}
	// Free ports are found by binding and closing them; another process can take one before the component binds
	// it. The component then exits at once with "address already in use" and the start is tried on new ports.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		cluster, err := startOnce(ctx, config)
		if err == nil || attempt == attempts || !errors.Is(err, errPortTaken) {
			return cluster, err
		}
		config.Logger.Warn("a port was taken before a component could bind it; starting again on new ports",
			"attempt", attempt, "error", err)
	}
}

func startOnce(ctx context.Context, config Config) (cluster *Cluster, err error) {
	dir, err := filepath.Abs(config.Dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", config.Dir, err)
	}
	if strings.ContainsAny(dir, " \t\n") {
		return nil, fmt.Errorf("directory %q contains whitespace, which the ready line cannot carry", dir)
	}
	config.Dir = dir
	if len(config.Controllers) == 0 {
		config.Controllers = DefaultControllers
	}
	binaries, err := findBinaries(config.BinDir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{config: config, kubeconfig: filepath.Join(dir, Kubeconfig)}
	if err := c.prepareDir(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				config.Logger.Warn("stopping after a failed start", "error", stopErr)
			}
		}
	}()

	_, serviceNet, err := net.ParseCIDR(ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("parsing the service CIDR: %w", err)
	}
	firstServiceIP := append(net.IP(nil), serviceNet.IP.To4()...)
	firstServiceIP[3]++
	if c.pki, err = pki.Ensure(filepath.Join(dir, PKIDir), pki.Options{ServiceIP: firstServiceIP}); err != nil {
		return nil, err
	}
	// One call, so that the four ports are distinct; a fixed API server port is kept out of the others.
	ports, err := freePorts(4, config.APIServerPort)
	if err != nil {
		return nil, err
	}
	etcdClientPort, etcdPeerPort, controllerManagerPort := ports[0], ports[1], ports[2]
	apiServerPort := config.APIServerPort
	if apiServerPort == 0 {
		apiServerPort = ports[3]
	}
	c.server = "https://127.0.0.1:" + strconv.Itoa(apiServerPort)
	c.internalServer = c.server
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClientPort)

	caPEM, err := c.pki.Read(pki.CACert)
	if err != nil {
		return nil, err
	}
	admin, err := tls.LoadX509KeyPair(c.pki.Path(pki.AdminCert), c.pki.Path(pki.AdminKey))
	if err != nil {
		return nil, fmt.Errorf("loading the admin client certificate: %w", err)
	}
	adminClient, err := httpsClient(caPEM, &admin)
	if err != nil {
		return nil, err
	}
	if err := c.writeKubeconfigs(caPEM); err != nil {
		return nil, err
	}

	etcd, err := c.start(ctx, "etcd", binaries.etcd, c.etcdArgs(etcdURL, etcdPeerPort))
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, etcd, "etcd health", config.Timeout, etcdHealthy(http.DefaultClient, etcdURL)); err != nil {
		return nil, err
	}

	apiServer, err := c.start(ctx, "kube-apiserver", binaries.apiServer, c.apiServerArgs(etcdURL, apiServerPort))
	if err != nil {
		return nil, err
	}
	// /readyz includes the RBAC bootstrap post-start hook; `default` is created by the bootstrap controller just
	// after, and cluster-admin is checked by name because tests rely on it.
	if err := waitFor(ctx, apiServer, "kube-apiserver readiness and RBAC bootstrap", config.Timeout,
		allOK(adminClient, c.server, "/readyz", "/api/v1/namespaces/default",
			"/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin")); err != nil {
		return nil, err
	}

	controllerManager, err := c.start(ctx, "kube-controller-manager", binaries.controllerManager,
		c.controllerManagerArgs(controllerManagerPort))
	if err != nil {
		return nil, err
	}
	controllerManagerClient, err := httpsClient(caPEM, nil)
	if err != nil {
		return nil, err
	}
	controllerManagerURL := "https://127.0.0.1:" + strconv.Itoa(controllerManagerPort)
	if err := waitFor(ctx, controllerManager, "kube-controller-manager health", config.Timeout,
		allOK(controllerManagerClient, controllerManagerURL, "/healthz")); err != nil {
		return nil, err
	}
	if controllerEnabled(config.Controllers, "serviceaccount-controller") {
		if err := waitFor(ctx, controllerManager, "the default ServiceAccount", config.Timeout,
			allOK(adminClient, c.server, "/api/v1/namespaces/default/serviceaccounts/default")); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Exited returns a channel that yields the first component that exits without being asked to.
func (c *Cluster) Exited() <-chan error {
	exited := make(chan error, len(c.processes))
	for _, p := range c.processes {
		go func() {
			select {
			case <-p.done:
				select {
				case <-p.stopping:
				default:
					exited <- fmt.Errorf("%w (log: %s)", p.exitError(), p.logPath)
				}
			case <-p.stopping:
			}
		}()
	}
	return exited
}

// Stop stops the controller manager, the API server and etcd, in that order, each with SIGTERM and then, past its
// grace period, SIGKILL. The error lists the components that had to be killed.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.processes) - 1; i >= 0; i-- {
		p := c.processes[i]
		if p.name == "containerd" && c.node != nil {
			// The kubelet is gone: the pods' containers go before containerd, whose shims would keep them.
			if err := c.node.run.KillPods(20 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		started := time.Now()
		// The API server drains in-flight requests and watches before it exits.
		grace := 15 * time.Second
		if p.name == "kube-apiserver" {
			grace = 70 * time.Second
		}
		err := p.stop(grace)
		if err != nil {
			errs = append(errs, err)
		}
		c.config.Logger.Info("stopped", "component", p.name, "took", time.Since(started).Round(time.Millisecond),
			"exit", exitStatus(p))
	}
	c.processes = nil
	if c.node != nil {
		errs = append(errs, c.node.close(c.config.Logger))
	}
	return errors.Join(errs...)
}

func (c *Cluster) start(ctx context.Context, name, binary string, args []string, extraEnv ...string) (*process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.LogsDir(), name+".log")
	env := c.env
	if len(extraEnv) > 0 {
		if env == nil {
			env = os.Environ()
		}
		env = append(slices.Clip(env), extraEnv...)
	}
	p, err := startProcess(name, binary, args, env, logPath)
	if err != nil {
		return nil, err
	}
	c.processes = append(c.processes, p)
	c.config.Logger.Info("started", "component", p.name, "pid", p.cmd.Process.Pid, "log", logPath)
	return p, nil
}

// LockDir creates dir and takes its lock, so that a second launcher on the same directory is refused before it
// touches anything there; closing the result releases it.
func LockDir(dir string) (io.Closer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("another kube-harness is running on %s: %w", dir, err)
	}
	return lock, nil
}

// prepareDir clears what --fresh asks to forget.
func (c *Cluster) prepareDir() error {
	dir := c.config.Dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if c.config.Fresh {
		names := []string{EtcdDir, PKIDir, Kubeconfig, controllerManagerKubeconfig}
		if c.node != nil {
			// The node's files: configuration, containerd's images and containers, the kubelet's pods, CNI state.
			names = append(names, "node", "containerd", "kubelet", "cni")
		}
		for _, name := range names {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("removing %s: %w", name, err)
			}
		}
	}
	if err := os.MkdirAll(c.LogsDir(), 0o755); err != nil {
		return fmt.Errorf("creating the logs directory: %w", err)
	}
	return nil
}

func (c *Cluster) writeKubeconfigs(caPEM []byte) error {
	type identity struct {
		path      string
		user      string
		cert, key string
	}
	identities := []identity{
		{c.kubeconfig, pki.AdminUser, pki.AdminCert, pki.AdminKey},
		{filepath.Join(c.config.Dir, controllerManagerKubeconfig), pki.ControllerManagerUser,
			pki.ControllerManagerCert, pki.ControllerManagerKey},
	}
	if c.node != nil {
		layout := c.node.layout
		identities = append(identities,
			identity{layout.SchedulerKubeconfig(), pki.SchedulerUser, pki.SchedulerCert, pki.SchedulerKey},
			identity{layout.KubeletKubeconfig(), pki.NodeUser(c.node.name), pki.KubeletClientCert, pki.KubeletClientKey},
			identity{layout.ProxyKubeconfig(), pki.ProxyUser, pki.ProxyCert, pki.ProxyKey},
		)
	}
	for _, id := range identities {
		cert, err := c.pki.Read(id.cert)
		if err != nil {
			return err
		}
		key, err := c.pki.Read(id.key)
		if err != nil {
			return err
		}
		// People and tests use the admin kubeconfig where the launcher runs; the components reach the API server
		// where they run.
		server := c.internalServer
		if id.path == c.kubeconfig {
			server = c.server
		}
		if err := kubeconfig.Write(id.path, server, caPEM, kubeconfig.Identity{User: id.user, Cert: cert, Key: key}); err != nil {
			return err
		}
	}
	return nil
}

type binaries struct {
	etcd, apiServer, controllerManager string
}

func findBinaries(dir string) (binaries, error) {
	found := binaries{
		etcd:              filepath.Join(dir, "etcd"),
		apiServer:         filepath.Join(dir, "kube-apiserver"),
		controllerManager: filepath.Join(dir, "kube-controller-manager"),
	}
	for _, path := range []string{found.etcd, found.apiServer, found.controllerManager} {
		info, err := os.Stat(path)
		if err != nil {
			return found, fmt.Errorf("%s is missing (build it with tests/kube/build.sh): %w", path, err)
		}
		if info.Mode()&0o111 == 0 {
			return found, fmt.Errorf("%s is not executable", path)
		}
	}
	return found, nil
}

// controllerEnabled reads a --controllers list as kube-controller-manager does: a name turns a controller on, `*`
// turns on every controller that is on by default, and `-name` turns one off.
func controllerEnabled(controllers []string, name string) bool {
	if slices.Contains(controllers, "-"+name) {
		return false
	}
	return slices.Contains(controllers, name) || slices.Contains(controllers, "*")
}

func exitStatus(p *process) string {
	if p.err == nil {
		return "0"
	}
	return p.err.Error()
}
