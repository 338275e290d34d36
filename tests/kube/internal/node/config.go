package node

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Network of a node. Everything lives in the run's network namespace, which has no link to any other namespace of
// the machine but the pods' own: no address here is reachable from the root namespace, nor routed out of it.
const (
	// PodCIDR is the range the CNI bridge hands out; its first address is the bridge's, the pods' gateway, and the
	// node's InternalIP, where the API server, the kubelet and kube-proxy's NodePorts listen.
	PodCIDR     = "10.244.0.0/24"
	NodeIP      = "10.244.0.1"
	NodeIPCIDR  = NodeIP + "/24"
	BridgeName  = "cni0"
	ClusterCIDR = "10.244.0.0/16"
	// NodeName is the name the kubelet registers. It is the same on every run, so a kept directory finds its node
	// (and the pods bound to it) again.
	NodeName = "kube-harness-node"
)

// Ports inside the namespace. The namespace is the run's own, so the components' usual ports are free there and
// nothing has to be searched for; only the forwarders on the root namespace's loopback take free ports.
const (
	EtcdClientPort        = 2379
	EtcdPeerPort          = 2380
	APIServerPort         = 6443
	ControllerManagerPort = 10257
	SchedulerPort         = 10259
	KubeletPort           = 10250
	KubeletHealthzPort    = 10248
	ProxyHealthzPort      = 10256
	ProxyMetricsPort      = 10249
	RegistryPort          = 5000
)

// RegistryHost is the name pods use for the registry ("localhost:5000/busybox:…"); containerd maps it to the
// registry's plain-HTTP address in the namespace, as a cluster configures a private registry.
const RegistryHost = "localhost:5000"

// Layout is where a node's files live, all below the launcher's directory.
type Layout struct {
	Dir string
}

func (l Layout) path(parts ...string) string {
	return filepath.Join(append([]string{l.Dir}, parts...)...)
}

// Directories and files of the node below DIR.
func (l Layout) ConfigDir() string           { return l.path("node") }
func (l Layout) ContainerdDir() string       { return l.path("containerd") }
func (l Layout) ContainerdConfig() string    { return l.path("node", "containerd.toml") }
func (l Layout) ContainerdSocket() string    { return l.path("containerd", "containerd.sock") }
func (l Layout) RegistryHostsDir() string    { return l.path("node", "certs.d") }
func (l Layout) CNIConfDir() string          { return l.path("node", "cni") }
func (l Layout) CNIDataDir() string          { return l.path("cni") }
func (l Layout) KubeletRootDir() string      { return l.path("kubelet") }
func (l Layout) KubeletConfig() string       { return l.path("node", "kubelet.yaml") }
func (l Layout) KubeletKubeconfig() string   { return l.path("node", "kubelet.kubeconfig") }
func (l Layout) ProxyConfig() string         { return l.path("node", "kube-proxy.yaml") }
func (l Layout) ProxyKubeconfig() string     { return l.path("node", "kube-proxy.kubeconfig") }
func (l Layout) SchedulerKubeconfig() string { return l.path("node", "scheduler.kubeconfig") }
func (l Layout) AuditPolicy() string         { return l.path("node", "audit-policy.yaml") }
func (l Layout) RegistryConfig() string      { return l.path("node", "registry.yaml") }
func (l Layout) ResolvConf() string          { return l.path("node", "resolv.conf") }
func (l Layout) PodLogsDir() string          { return l.path("logs", "pods") }

// ContainerdOptions are the values of containerd's configuration that are not fixed paths below DIR.
type ContainerdOptions struct {
	// ShimPath is containerd-shim-runc-v2 (the one built beside containerd), RuncPath the runc binary.
	ShimPath, RuncPath string
	// CNIBinDir holds the CNI plugins (Debian's containernetworking-plugins: /usr/lib/cni).
	CNIBinDir string
	// SandboxImage is the pause image in the node's registry.
	SandboxImage string
}

// ContainerdTOML is containerd's configuration (version 3, containerd 2.x): everything it keeps below DIR,
// images pulled from the run's registry, runc with the cgroupfs driver (as the kubelet), pod network namespaces
// bound below its state directory instead of /run/netns, and the plugins that would touch host paths (NRI's socket,
// /opt/containerd) or reach out (tracing) off. restrict_oom_score_adj: a container's oom_score_adj is kept at or
// above containerd's own, as lowering it needs CAP_SYS_RESOURCE, which a sandboxed root (this machine's) may lack;
// runc would fail every sandbox (the kubelet asks -998 for them) with "failed to update /proc/self/oom_score_adj".
func (l Layout) ContainerdTOML(opts ContainerdOptions) string {
	q := strconv.Quote
	root := l.path("containerd")
	return fmt.Sprintf(`version = 3
root = %s
state = %s
temp = %s
disabled_plugins = [
  "io.containerd.nri.v1.nri",
  "io.containerd.internal.v1.opt",
  "io.containerd.image-verifier.v1.bindir",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs",
]

[grpc]
  address = %s

[ttrpc]
  address = %s

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %s
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = %s

[plugins.'io.containerd.cri.v1.runtime']
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = %s
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %s
        Root = %s
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%s]
    conf_dir = %s
    max_conf_num = 1
    use_internal_loopback = true

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`,
		q(filepath.Join(root, "root")), q(filepath.Join(root, "state")), q(filepath.Join(root, "tmp")),
		q(l.ContainerdSocket()), q(l.ContainerdSocket()+".ttrpc"),
		q(opts.SandboxImage), q(l.RegistryHostsDir()),
		q(opts.ShimPath), q(opts.RuncPath), q(filepath.Join(root, "runc")),
		q(opts.CNIBinDir), q(l.CNIConfDir()))
}

// RegistryHostsToml points containerd at the run's registry for RegistryHost, over plain HTTP on the namespace's
// loopback.
func RegistryHostsToml() string {
	endpoint := "http://127.0.0.1:" + strconv.Itoa(RegistryPort)
	return fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", endpoint, endpoint)
}

// CNIConfig is the pod network: a bridge whose address is the node's, host-local addresses from PodCIDR (its
// state below DIR), hairpin mode so that a pod reaches itself through a Service, and portmap for hostPort.
func (l Layout) CNIConfig(network string) (string, error) {
	config := map[string]any{
		"cniVersion": "1.0.0",
		"name":       network,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      BridgeName,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": filepath.Join(l.CNIDataDir(), "networks"),
					"ranges":  []any{[]any{map[string]any{"subnet": PodCIDR, "gateway": NodeIP}}},
					"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(config, "", "  ")
	return string(data), err
}

// KubeletOptions are the kubelet's settings that come from the launcher.
type KubeletOptions struct {
	CgroupRoot string
	// CACert verifies client certificates on the kubelet's API; TLSCert and TLSKey are its serving pair.
	CACert, TLSCert, TLSKey string
}

// KubeletYAML is the kubelet's configuration file.
func (l Layout) KubeletYAML(opts KubeletOptions) (string, error) {
	config := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
		// Its API on the node's address (the API server reaches it there for logs, exec and port-forward);
		// health on the namespace's loopback; no read-only port.
		"address":            NodeIP,
		"port":               KubeletPort,
		"readOnlyPort":       0,
		"healthzBindAddress": "127.0.0.1",
		"healthzPort":        KubeletHealthzPort,
		"tlsCertFile":        opts.TLSCert,
		"tlsPrivateKeyFile":  opts.TLSKey,
		// Client certificates from the cluster CA, bearer tokens checked by the API server (TokenReview), every
		// request authorised by the API server (SubjectAccessReview): as kubeadm sets a kubelet up.
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": opts.CACert},
		},
		"authorization":            map[string]any{"mode": "Webhook"},
		"containerRuntimeEndpoint": "unix://" + l.ContainerdSocket(),
		// cgroupfs, as containerd's runc is configured; everything below the run's own cgroup.
		"cgroupDriver":    "cgroupfs",
		"cgroupRoot":      opts.CgroupRoot,
		"cgroupsPerQOS":   true,
		"failCgroupV1":    false,
		"failSwapOn":      false,
		"podLogsDir":      l.PodLogsDir(),
		"volumePluginDir": filepath.Join(l.KubeletRootDir(), "volume-plugins"),
		// No cluster DNS, and no nameserver from the machine: a pod's lookups fail at once instead of leaving.
		"resolvConf":    l.ResolvConf(),
		"clusterDomain": "cluster.local",
		// A shared CI disk may be nearly full; only a machine that is really out of memory or disk evicts, and
		// images are never garbage-collected (they come from the run's own registry).
		"evictionHard": map[string]string{
			"memory.available":   "100Mi",
			"nodefs.available":   "1%",
			"nodefs.inodesFree":  "1%",
			"imagefs.available":  "1%",
			"imagefs.inodesFree": "1%",
		},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"serializeImagePulls":         false,
		// The launcher restores the host sysctls the kubelet changes; with protectKernelDefaults it would refuse
		// to start on this machine instead.
		"protectKernelDefaults": false,
		"rotateCertificates":    false,
		"serverTLSBootstrap":    false,
		// Status reported often, so that readiness and pod changes show quickly in tests.
		"nodeStatusUpdateFrequency": "5s",
		"syncFrequency":             "10s",
		"shutdownGracePeriod":       "0s",
	}
	data, err := json.MarshalIndent(config, "", "  ")
	return string(data), err
}

// ProxyYAML is kube-proxy's configuration: iptables mode in the namespace, nothing machine-wide changed (the
// conntrack table size is global, so it is left as it is).
func (l Layout) ProxyYAML() (string, error) {
	config := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"clientConnection":   map[string]any{"kubeconfig": l.ProxyKubeconfig()},
		"hostnameOverride":   NodeName,
		"bindAddress":        "0.0.0.0",
		"healthzBindAddress": "127.0.0.1:" + strconv.Itoa(ProxyHealthzPort),
		"metricsBindAddress": "127.0.0.1:" + strconv.Itoa(ProxyMetricsPort),
		"mode":               "iptables",
		"clusterCIDR":        ClusterCIDR,
		"detectLocalMode":    "ClusterCIDR",
		"iptables":           map[string]any{"minSyncPeriod": "0s", "syncPeriod": "30s"},
		"conntrack": map[string]any{
			"maxPerCore":            0,
			"tcpEstablishedTimeout": "0s",
			"tcpCloseWaitTimeout":   "0s",
		},
	}
	data, err := json.MarshalIndent(config, "", "  ")
	return string(data), err
}

// AuditPolicy records every write (create, update, patch, delete, deletecollection) of every resource at the
// Metadata level — who, what, when, the answer's status — and nothing else.
const AuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: None
`

// RegistryConfig is CNCF Distribution's configuration: storage in dir, plain HTTP on the namespace's loopback.
func RegistryConfig(storage string) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: 127.0.0.1:%d
`, strconv.Quote(storage), RegistryPort)
}

// WriteFile writes content to path, creating its directory.
func WriteFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
