package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"wasm-reconciler/tests/kube/internal/cgroups"
	"wasm-reconciler/tests/kube/internal/forward"
	"wasm-reconciler/tests/kube/internal/netns"
	"wasm-reconciler/tests/kube/internal/node"
	"wasm-reconciler/tests/kube/internal/pki"
)

// NodeConfig configures the node of a cluster started with Config.Node.
type NodeConfig struct {
	// RegistryDir, when set, is the storage of a registry that runs in the node's namespace on 127.0.0.1:5000
	// (node.RegistryHost for pods) and gets the pause and busybox images at start.
	RegistryDir string
	// ImagesDir holds the OCI layouts pause/ and busybox/ (build.sh puts them beside the bin directory).
	ImagesDir string
	// RegistryPort is the registry's port on the launcher's 127.0.0.1; 0 picks a free one.
	RegistryPort int
	// CNIBinDir holds the CNI plugins bridge, host-local and portmap.
	CNIBinDir string
	// Extra flags of the node's components.
	ExtraSchedulerArgs, ExtraKubeletArgs, ExtraProxyArgs []string
}

// ImageTag is the tag of the images the launcher pushes to the registry: RegistryHost/pause:ImageTag and
// RegistryHost/busybox:ImageTag.
const ImageTag = "kube-harness"

// Images are the OCI layouts build.sh makes, by name in ImagesDir and in the registry.
var Images = []string{"pause", "busybox"}

// SandboxImage is the pods' sandbox (pause) image, pulled by containerd from the run's registry.
var SandboxImage = node.RegistryHost + "/pause:" + ImageTag

// nodeState is what a node run holds beyond the processes.
type nodeState struct {
	name       string
	layout     node.Layout
	run        *node.Run
	ns         *netns.Namespace
	forwarders []*forward.Forwarder
	// hostNetns is the launcher's own network namespace, held open to move the spawning thread back.
	hostNetns *os.File
	// enteredNetns says the spawning thread is in the node's namespace.
	enteredNetns bool
	registryPort int
}

// NodeName is the name of the node (empty without one).
func (c *Cluster) NodeName() string {
	if c.node == nil {
		return ""
	}
	return c.node.name
}

// RegistryAddress is the registry's host:port on the launcher's loopback (empty without a registry).
func (c *Cluster) RegistryAddress() string {
	if c.node == nil || c.node.registryPort == 0 {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(c.node.registryPort)
}

// AuditLog is the API server's audit log (written on a node run only).
func (c *Cluster) AuditLog() string { return filepath.Join(c.LogsDir(), "audit.log") }

type nodeBinaries struct {
	scheduler, kubelet, proxy, containerd, shim string
	runc, registry, skopeo                      string
}

func findNodeBinaries(binDir string, config *NodeConfig) (nodeBinaries, error) {
	found := nodeBinaries{
		scheduler:  filepath.Join(binDir, "kube-scheduler"),
		kubelet:    filepath.Join(binDir, "kubelet"),
		proxy:      filepath.Join(binDir, "kube-proxy"),
		containerd: filepath.Join(binDir, "containerd"),
		shim:       filepath.Join(binDir, "containerd-shim-runc-v2"),
	}
	for _, path := range []string{found.scheduler, found.kubelet, found.proxy, found.containerd, found.shim} {
		if info, err := os.Stat(path); err != nil || info.Mode()&0o111 == 0 {
			return found, fmt.Errorf("%s is missing or not executable (build it with tests/kube/build.sh)", path)
		}
	}
	// Debian packages: what each is for, so that a missing one says what to install.
	tools := []struct {
		name, pkg string
		into      *string
		needed    bool
	}{
		{"runc", "runc", &found.runc, true},
		{"iptables", "iptables", nil, true},
		{"iptables-restore", "iptables", nil, true},
		{"conntrack", "conntrack", nil, true},
		{"docker-registry", "docker-registry", &found.registry, config.RegistryDir != ""},
		{"skopeo", "skopeo", &found.skopeo, config.RegistryDir != ""},
	}
	for _, tool := range tools {
		if !tool.needed {
			continue
		}
		path, err := exec.LookPath(tool.name)
		if err != nil {
			return found, fmt.Errorf("%s is required for a node (Debian package %s)", tool.name, tool.pkg)
		}
		if tool.into != nil {
			*tool.into = path
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "portmap"} {
		if _, err := os.Stat(filepath.Join(config.CNIBinDir, plugin)); err != nil {
			return found, fmt.Errorf("the CNI plugin %s is not in %s (Debian package containernetworking-plugins)",
				plugin, config.CNIBinDir)
		}
	}
	if config.RegistryDir != "" {
		for _, image := range Images {
			if _, err := os.Stat(filepath.Join(config.ImagesDir, image, "index.json")); err != nil {
				return found, fmt.Errorf("the %s image is not in %s (build it with tests/kube/build.sh)", image,
					config.ImagesDir)
			}
		}
	}
	return found, nil
}

// nodeEnv is the components' environment: the launcher's without proxy settings (nothing here is to be reached
// through a proxy, and nothing may leave the namespace), with the sbin directories on PATH for iptables.
func nodeEnv() []string {
	var env []string
	path := ""
	for _, entry := range os.Environ() {
		name, value, _ := strings.Cut(entry, "=")
		switch strings.ToLower(name) {
		case "http_proxy", "https_proxy", "no_proxy", "all_proxy", "ftp_proxy":
			continue
		case "path":
			path = value
			continue
		}
		env = append(env, entry)
	}
	for _, dir := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		if !strings.Contains(":"+path+":", ":"+dir+":") {
			path = strings.TrimPrefix(path+":"+dir, ":")
		}
	}
	return append(env, "PATH="+path)
}

func startNode(ctx context.Context, config Config) (c *Cluster, err error) {
	dir, err := filepath.Abs(config.Dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", config.Dir, err)
	}
	if strings.ContainsAny(dir, " \t\n") {
		return nil, fmt.Errorf("directory %q contains whitespace, which the ready line cannot carry", dir)
	}
	config.Dir = dir
	if len(config.Controllers) == 0 {
		config.Controllers = []string{"*"}
	}
	layout := node.Layout{Dir: dir}
	// A unix socket path has at most 107 bytes; the kubelet's own sockets below its root directory are longer.
	if socket := filepath.Join(layout.KubeletRootDir(), "plugins_registry", "x.sock"); len(socket) > 100 {
		return nil, fmt.Errorf("directory %s is too long for the node's unix sockets (%s)", dir, socket)
	}
	binaries, err := findBinaries(config.BinDir)
	if err != nil {
		return nil, err
	}
	nodeBins, err := findNodeBinaries(config.BinDir, config.Node)
	if err != nil {
		return nil, err
	}
	logger := config.Logger
	c = &Cluster{config: config, kubeconfig: filepath.Join(dir, Kubeconfig), env: nodeEnv(),
		internalServer: "https://127.0.0.1:" + strconv.Itoa(node.APIServerPort)}
	c.node = &nodeState{name: node.NodeName, layout: layout}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				logger.Warn("stopping after a failed start", "error", stopErr)
			}
		}
	}()

	// The run's record first (it sweeps the leftovers of killed launchers, which may have mounts below dir), then
	// the directory.
	logger.Info("node: sweeping runs of killed launchers and registering this one")
	if c.node.run, err = node.Register(dir, logger); err != nil {
		return c, err
	}
	if err := c.prepareDir(); err != nil {
		return c, err
	}
	// containerd's state directory is meant to be on tmpfs (/run): nothing of an earlier run is valid.
	if err := os.RemoveAll(filepath.Join(layout.ContainerdDir(), "state")); err != nil {
		return c, err
	}
	if err := c.node.createNetwork(logger); err != nil {
		return c, err
	}
	if err := cgroups.Create(c.node.run.RuntimeCgroup()); err != nil {
		return c, err
	}

	_, serviceNet, err := net.ParseCIDR(ServiceCIDR)
	if err != nil {
		return c, fmt.Errorf("parsing the service CIDR: %w", err)
	}
	firstServiceIP := append(net.IP(nil), serviceNet.IP.To4()...)
	firstServiceIP[3]++
	if c.pki, err = pki.Ensure(filepath.Join(dir, PKIDir), pki.Options{ServiceIP: firstServiceIP,
		Node: &pki.NodeOptions{Name: c.node.name, IP: net.ParseIP(node.NodeIP)}}); err != nil {
		return c, err
	}
	caPEM, err := c.pki.Read(pki.CACert)
	if err != nil {
		return c, err
	}
	admin, err := tls.LoadX509KeyPair(c.pki.Path(pki.AdminCert), c.pki.Path(pki.AdminKey))
	if err != nil {
		return c, fmt.Errorf("loading the admin client certificate: %w", err)
	}
	adminClient, err := httpsClient(caPEM, &admin)
	if err != nil {
		return c, err
	}
	// Clients for what listens only in the namespace.
	insideClient := &http.Client{Transport: &http.Transport{DialContext: c.node.ns.DialContext}}
	insideTLSClient, err := httpsClient(caPEM, nil)
	if err != nil {
		return c, err
	}
	insideTLSClient.Transport.(*http.Transport).DialContext = c.node.ns.DialContext

	apiForwarder, err := c.node.forward(logger, "kube-apiserver", config.APIServerPort, node.APIServerPort)
	if err != nil {
		return c, err
	}
	c.server = "https://127.0.0.1:" + strconv.Itoa(apiForwarder.Port())
	if err := os.MkdirAll(layout.ConfigDir(), 0o755); err != nil {
		return c, err
	}
	if err := c.writeKubeconfigs(caPEM); err != nil {
		return c, err
	}
	if err := c.node.writeConfigs(c, nodeBins); err != nil {
		return c, err
	}

	// From here on every component starts in the namespace.
	if err := c.node.enterNetns(); err != nil {
		return c, err
	}

	if config.Node.RegistryDir != "" {
		if err := c.startRegistry(ctx, nodeBins, insideClient); err != nil {
			return c, err
		}
	} else {
		logger.Warn("node: no --registry-dir, so no registry: no pod can start unless something serves " +
			SandboxImage + " at 127.0.0.1:5000 in the node's namespace")
	}

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(node.EtcdClientPort)
	etcd, err := c.start(ctx, "etcd", binaries.etcd, c.etcdArgs(etcdURL, node.EtcdPeerPort))
	if err != nil {
		return c, err
	}
	if err := waitFor(ctx, etcd, "etcd health", config.Timeout, etcdHealthy(insideClient, etcdURL)); err != nil {
		return c, err
	}

	// Go (1.25 on) refuses SHA-1 signatures in TLS 1.2, and so a client that sends no signature_algorithms, which
	// then means SHA-1: busybox's own TLS (wget https://… in a busybox pod, as tests do with in-cluster
	// credentials). tlssha1=1 lets it in; every other client negotiates as before.
	apiServer, err := c.start(ctx, "kube-apiserver", binaries.apiServer, c.nodeAPIServerArgs(etcdURL),
		"GODEBUG=tlssha1=1")
	if err != nil {
		return c, err
	}
	if err := waitFor(ctx, apiServer, "kube-apiserver readiness and RBAC bootstrap", config.Timeout,
		allOK(adminClient, c.server, "/readyz", "/api/v1/namespaces/default",
			"/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin")); err != nil {
		return c, err
	}

	controllerManager, err := c.start(ctx, "kube-controller-manager", binaries.controllerManager,
		c.controllerManagerArgs(node.ControllerManagerPort))
	if err != nil {
		return c, err
	}
	if err := waitFor(ctx, controllerManager, "kube-controller-manager health", config.Timeout,
		allOK(insideTLSClient, "https://127.0.0.1:"+strconv.Itoa(node.ControllerManagerPort), "/healthz")); err != nil {
		return c, err
	}

	scheduler, err := c.start(ctx, "kube-scheduler", nodeBins.scheduler, c.schedulerArgs())
	if err != nil {
		return c, err
	}
	if err := waitFor(ctx, scheduler, "kube-scheduler health", config.Timeout,
		allOK(insideTLSClient, "https://127.0.0.1:"+strconv.Itoa(node.SchedulerPort), "/healthz")); err != nil {
		return c, err
	}

	containerd, err := c.start(ctx, "containerd", nodeBins.containerd,
		[]string{"--config", layout.ContainerdConfig(), "--log-level", "info"})
	if err != nil {
		return c, err
	}
	// Its shims, which outlive it by design, start in its cgroup, where the stop finds them. It starts none
	// before its CRI serves, so joining right after the start is in time.
	if err := cgroups.Join(c.node.run.RuntimeCgroup(), containerd.cmd.Process.Pid); err != nil {
		return c, err
	}
	if err := waitFor(ctx, containerd, "containerd's socket", config.Timeout,
		socketAccepts(layout.ContainerdSocket())); err != nil {
		return c, err
	}

	kubelet, err := c.start(ctx, "kubelet", nodeBins.kubelet, c.kubeletArgs())
	if err != nil {
		return c, err
	}
	if err := waitFor(ctx, kubelet, "kubelet health", config.Timeout,
		allOK(insideClient, "http://127.0.0.1:"+strconv.Itoa(node.KubeletHealthzPort), "/healthz")); err != nil {
		return c, err
	}

	proxy, err := c.start(ctx, "kube-proxy", nodeBins.proxy,
		append([]string{"--config=" + layout.ProxyConfig()}, config.Node.ExtraProxyArgs...))
	if err != nil {
		return c, err
	}
	if err := waitFor(ctx, proxy, "kube-proxy health", config.Timeout,
		allOK(insideClient, "http://127.0.0.1:"+strconv.Itoa(node.ProxyHealthzPort), "/healthz")); err != nil {
		return c, err
	}

	if err := waitFor(ctx, kubelet, "node "+c.node.name+" Ready without taints", config.Timeout,
		nodeReady(adminClient, c.server, c.node.name)); err != nil {
		return c, err
	}
	if controllerEnabled(config.Controllers, "serviceaccount-controller") {
		if err := waitFor(ctx, controllerManager, "the default ServiceAccount", config.Timeout,
			allOK(adminClient, c.server, "/api/v1/namespaces/default/serviceaccounts/default")); err != nil {
			return c, err
		}
	}
	return c, nil
}

// createNetwork creates the run's network namespace: loopback up; the bridge with the node's address, which is
// the pods' gateway; a route for the Service range through the bridge (so that the node's own processes, such as
// the API server calling a webhook, reach ClusterIPs, which kube-proxy rewrites); forwarding, and bridged traffic
// through iptables (a pod reaching a Service whose backend is on the same bridge). No default route and no link
// to any other namespace: traffic to anything else is unreachable.
func (n *nodeState) createNetwork(logger *slog.Logger) error {
	ns, err := netns.Create(n.run.ID)
	if err != nil {
		return err
	}
	n.ns = ns
	logger.Info("node: network namespace created", "netns", ns.Path, "node_ip", node.NodeIP)
	err = ns.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("finding lo: %w", err)
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return fmt.Errorf("bringing lo up: %w", err)
		}
		bridge := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: node.BridgeName}}
		if err := netlink.LinkAdd(bridge); err != nil {
			return fmt.Errorf("creating bridge %s: %w", node.BridgeName, err)
		}
		address, err := netlink.ParseAddr(node.NodeIPCIDR)
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(bridge, address); err != nil {
			return fmt.Errorf("adding %s to %s: %w", node.NodeIPCIDR, node.BridgeName, err)
		}
		if err := netlink.LinkSetUp(bridge); err != nil {
			return fmt.Errorf("bringing %s up: %w", node.BridgeName, err)
		}
		_, services, err := net.ParseCIDR(ServiceCIDR)
		if err != nil {
			return err
		}
		route := &netlink.Route{LinkIndex: bridge.Attrs().Index, Dst: services, Src: net.ParseIP(node.NodeIP)}
		if err := netlink.RouteAdd(route); err != nil {
			return fmt.Errorf("adding a route for %s: %w", ServiceCIDR, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, sysctl := range [][2]string{
		{"net.ipv4.ip_forward", "1"},
		{"net.bridge.bridge-nf-call-iptables", "1"},
	} {
		if err := ns.WriteSysctl(sysctl[0], sysctl[1]); err != nil {
			return err
		}
	}
	return nil
}

// enterNetns moves the spawning thread into the node's namespace, keeping a handle on the launcher's own.
func (n *nodeState) enterNetns() error {
	return onSpawnThread(func() error {
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			return err
		}
		if err := netns.Enter(n.ns.Path); err != nil {
			_ = self.Close()
			return err
		}
		n.hostNetns = self
		n.enteredNetns = true
		return nil
	})
}

// forward relays a free (or the given) port of the launcher's 127.0.0.1 to a port of the namespace's.
func (n *nodeState) forward(logger *slog.Logger, name string, port, target int) (*forward.Forwarder, error) {
	f, err := forward.Listen(name, port, "127.0.0.1:"+strconv.Itoa(target), n.ns.DialContext, logger)
	if err != nil {
		return nil, err
	}
	n.forwarders = append(n.forwarders, f)
	return f, nil
}

// close ends the forwarders, moves the spawning thread back, ends the namespace's thread and removes the run's
// leftovers (node.Run.Close).
func (n *nodeState) close(logger *slog.Logger) error {
	var errs []error
	for _, f := range n.forwarders {
		_ = f.Close()
	}
	n.forwarders = nil
	if n.enteredNetns {
		errs = append(errs, onSpawnThread(func() error {
			if err := netns.EnterFile(n.hostNetns); err != nil {
				return fmt.Errorf("moving the spawning thread back to the launcher's network namespace: %w", err)
			}
			n.enteredNetns = false
			return nil
		}))
		_ = n.hostNetns.Close()
	}
	if n.ns != nil {
		n.ns.Close()
		n.ns = nil
	}
	if n.run != nil {
		errs = append(errs, n.run.Close(logger))
		n.run = nil
	}
	return errors.Join(errs...)
}

// writeConfigs writes the node's configuration files below DIR.
func (n *nodeState) writeConfigs(c *Cluster, bins nodeBinaries) error {
	l := n.layout
	cni, err := l.CNIConfig(n.run.CNINetwork())
	if err != nil {
		return err
	}
	kubelet, err := l.KubeletYAML(node.KubeletOptions{
		CgroupRoot: n.run.CgroupRoot(),
		CACert:     c.pki.Path(pki.CACert),
		TLSCert:    c.pki.Path(pki.KubeletServingCert),
		TLSKey:     c.pki.Path(pki.KubeletServingKey),
	})
	if err != nil {
		return err
	}
	proxy, err := l.ProxyYAML()
	if err != nil {
		return err
	}
	// The CNI directory holds only this run's network (containerd uses the first file it finds).
	if err := os.RemoveAll(l.CNIConfDir()); err != nil {
		return err
	}
	files := map[string]string{
		l.ContainerdConfig(): l.ContainerdTOML(node.ContainerdOptions{ShimPath: bins.shim, RuncPath: bins.runc,
			CNIBinDir: c.config.Node.CNIBinDir, SandboxImage: SandboxImage}),
		filepath.Join(l.RegistryHostsDir(), node.RegistryHost, "hosts.toml"): node.RegistryHostsToml(),
		filepath.Join(l.CNIConfDir(), "10-kube-harness.conflist"):            cni,
		l.KubeletConfig(): kubelet,
		l.ProxyConfig():   proxy,
		l.AuditPolicy():   node.AuditPolicy,
		// An empty resolv.conf: pods get no nameserver at all.
		l.ResolvConf(): "# kube-harness: no DNS for pods",
	}
	if c.config.Node.RegistryDir != "" {
		files[l.RegistryConfig()] = node.RegistryConfig(c.config.Node.RegistryDir)
	}
	for path, content := range files {
		if err := node.WriteFile(path, content); err != nil {
			return err
		}
	}
	return os.MkdirAll(l.PodLogsDir(), 0o755)
}

// startRegistry runs the registry in the namespace, forwards a port of the launcher's loopback to it and pushes
// the images into it.
func (c *Cluster) startRegistry(ctx context.Context, bins nodeBinaries, insideClient *http.Client) error {
	storage, err := filepath.Abs(c.config.Node.RegistryDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return fmt.Errorf("creating the registry's storage %s: %w", storage, err)
	}
	registry, err := c.start(ctx, "registry", bins.registry, []string{"serve", c.node.layout.RegistryConfig()})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, registry, "the registry", c.config.Timeout,
		allOK(insideClient, "http://127.0.0.1:"+strconv.Itoa(node.RegistryPort), "/v2/")); err != nil {
		return err
	}
	forwarder, err := c.node.forward(c.config.Logger, "registry", c.config.Node.RegistryPort, node.RegistryPort)
	if err != nil {
		return err
	}
	c.node.registryPort = forwarder.Port()
	for _, image := range Images {
		started := time.Now()
		source := "oci:" + filepath.Join(c.config.Node.ImagesDir, image) + ":" + ImageTag
		destination := fmt.Sprintf("docker://127.0.0.1:%d/%s:%s", forwarder.Port(), image, ImageTag)
		push := exec.CommandContext(ctx, bins.skopeo, "copy", "--quiet", "--insecure-policy",
			"--dest-tls-verify=false", source, destination)
		push.Env = append(nodeEnv(), "TMPDIR="+os.TempDir())
		if output, err := push.CombinedOutput(); err != nil {
			return fmt.Errorf("pushing %s to the registry: %w: %s", image, err, strings.TrimSpace(string(output)))
		}
		c.config.Logger.Info("node: image pushed", "image", node.RegistryHost+"/"+image+":"+ImageTag,
			"took", time.Since(started).Round(time.Millisecond))
	}
	return nil
}

// socketAccepts holds once a unix socket accepts connections.
func socketAccepts(path string) func(context.Context) error {
	return func(ctx context.Context) error {
		var dialer net.Dialer
		conn, err := dialer.DialContext(ctx, "unix", path)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// nodeReady holds once the node reports Ready and carries no taint (the node lifecycle controller removes
// node.kubernetes.io/not-ready once the kubelet reports Ready).
func nodeReady(client *http.Client, server, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		body, err := getOK(ctx, client, server+"/api/v1/nodes/"+name)
		if err != nil {
			return err
		}
		var status struct {
			Spec struct {
				Taints []struct {
					Key, Effect string
				} `json:"taints"`
			} `json:"spec"`
			Status struct {
				Conditions []struct {
					Type, Status, Reason, Message string
				} `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal(body, &status); err != nil {
			return fmt.Errorf("decoding node %s: %w", name, err)
		}
		ready := false
		for _, condition := range status.Status.Conditions {
			if condition.Type == "Ready" {
				if condition.Status != "True" {
					return fmt.Errorf("node %s is not Ready: %s: %s", name, condition.Reason, condition.Message)
				}
				ready = true
			}
		}
		if !ready {
			return fmt.Errorf("node %s has no Ready condition yet", name)
		}
		if len(status.Spec.Taints) > 0 {
			return fmt.Errorf("node %s is tainted: %v", name, status.Spec.Taints)
		}
		return nil
	}
}
