package cluster

import (
	"path/filepath"
	"strconv"
	"strings"

	"wasm-reconciler/tests/kube/internal/node"
	"wasm-reconciler/tests/kube/internal/pki"
)

// etcdMemberName names the single etcd member.
const etcdMemberName = "kube-harness"

func (c *Cluster) etcdArgs(clientURL string, peerPort int) []string {
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	args := []string{
		"--name=" + etcdMemberName,
		"--data-dir=" + filepath.Join(c.config.Dir, EtcdDir),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + etcdMemberName + "=" + peerURL,
		"--initial-cluster-state=new",
		"--log-level=info",
	}
	if !c.config.EtcdFsync {
		args = append(args, "--unsafe-no-fsync=true")
	}
	return append(args, c.config.ExtraEtcdArgs...)
}

func (c *Cluster) apiServerArgs(etcdURL string, port int) []string {
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// The `kubernetes` Service would get an Endpoints object with 127.0.0.1, which validation refuses.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(c.config.Dir, PKIDir, "kube-apiserver"),
		"--tls-cert-file=" + c.pki.Path(pki.APIServerCert),
		"--tls-private-key-file=" + c.pki.Path(pki.APIServerKey),
		"--client-ca-file=" + c.pki.Path(pki.CACert),
		"--authorization-mode=RBAC",
		// The aggregation layer, as kubeadm configures it: without a request-header CA, every delegating
		// component (the controller manager's own endpoints, aggregated API servers) logs errors about it.
		"--requestheader-client-ca-file=" + c.pki.Path(pki.FrontProxyCACert),
		"--requestheader-allowed-names=" + pki.FrontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + c.pki.Path(pki.FrontProxyClientCert),
		"--proxy-client-key-file=" + c.pki.Path(pki.FrontProxyClientKey),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--service-account-key-file=" + c.pki.Path(pki.ServiceAccountPub),
		"--service-account-signing-key-file=" + c.pki.Path(pki.ServiceAccountKey),
	}
	return append(args, c.config.ExtraAPIServerArgs...)
}

func (c *Cluster) controllerManagerArgs(port int) []string {
	kubeconfig := filepath.Join(c.config.Dir, controllerManagerKubeconfig)
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + c.pki.Path(pki.ControllerManagerTLSCert),
		"--tls-private-key-file=" + c.pki.Path(pki.ControllerManagerTLSKey),
		"--controllers=" + strings.Join(c.config.Controllers, ","),
		// One controller manager: no lease to wait for at start.
		"--leader-elect=false",
		// Each controller acts as its own ServiceAccount in kube-system, bound by the RBAC bootstrap policy, as
		// kubeadm sets it up.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + c.pki.Path(pki.ServiceAccountKey),
		"--root-ca-file=" + c.pki.Path(pki.CACert),
	}
	return append(args, c.config.ExtraControllerManagerArgs...)
}

// nodeAPIServerArgs are the API server's flags on a node: the plain ones, then what a node needs. It listens on
// every address of the node's namespace (loopback, for the launcher's forwarder and the components; the node's
// address, which the `kubernetes` Service's endpoints carry, for pods) and advertises the node's address.
func (c *Cluster) nodeAPIServerArgs(etcdURL string) []string {
	args := c.apiServerArgs(etcdURL, node.APIServerPort)
	// The plain flags end with the extra ones; the node's go before them, so that an extra flag still wins.
	plain := args[:len(args)-len(c.config.ExtraAPIServerArgs)]
	var kept []string
	for _, arg := range plain {
		switch {
		case strings.HasPrefix(arg, "--bind-address="), strings.HasPrefix(arg, "--advertise-address="),
			strings.HasPrefix(arg, "--endpoint-reconciler-type="), strings.HasPrefix(arg, "--authorization-mode="):
			continue
		}
		kept = append(kept, arg)
	}
	kept = append(kept,
		"--bind-address=0.0.0.0",
		"--advertise-address="+node.NodeIP,
		// Node authorizes each kubelet for its own node's objects, NodeRestriction keeps it from writing others'.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--kubelet-client-certificate="+c.pki.Path(pki.APIServerKubeletClientCert),
		"--kubelet-client-key="+c.pki.Path(pki.APIServerKubeletClientKey),
		"--kubelet-certificate-authority="+c.pki.Path(pki.CACert),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// The write history: every create, update, patch and delete, with its user, as JSON lines.
		"--audit-policy-file="+c.node.layout.AuditPolicy(),
		"--audit-log-path="+c.AuditLog(),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxbackup=0",
		"--audit-log-maxsize=0",
	)
	return append(kept, c.config.ExtraAPIServerArgs...)
}

func (c *Cluster) schedulerArgs() []string {
	kubeconfig := c.node.layout.SchedulerKubeconfig()
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(node.SchedulerPort),
		"--tls-cert-file=" + c.pki.Path(pki.SchedulerTLSCert),
		"--tls-private-key-file=" + c.pki.Path(pki.SchedulerTLSKey),
		"--leader-elect=false",
	}
	return append(args, c.config.Node.ExtraSchedulerArgs...)
}

func (c *Cluster) kubeletArgs() []string {
	layout := c.node.layout
	args := []string{
		"--config=" + layout.KubeletConfig(),
		"--kubeconfig=" + layout.KubeletKubeconfig(),
		"--hostname-override=" + c.node.name,
		"--node-ip=" + node.NodeIP,
		"--root-dir=" + layout.KubeletRootDir(),
		"--cert-dir=" + filepath.Join(c.config.Dir, PKIDir, "kubelet"),
	}
	return append(args, c.config.Node.ExtraKubeletArgs...)
}
