package cluster

import (
	"path/filepath"
	"strconv"
	"strings"

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
