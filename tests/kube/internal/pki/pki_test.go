package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"slices"
	"testing"
)

func TestEnsureIssuesCertificatesThatVerify(t *testing.T) {
	set, err := Ensure(t.TempDir(), Options{ServiceIP: net.IPv4(10, 96, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ca := mustCertificate(t, set, CACert)
	if !ca.IsCA {
		t.Fatal("the CA certificate is not a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	server := mustCertificate(t, set, APIServerCert)
	for _, name := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc", "10.96.0.1"} {
		opts := x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if _, err := server.Verify(opts); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}

	admin := mustCertificate(t, set, AdminCert)
	if admin.Subject.CommonName != AdminUser || len(admin.Subject.Organization) != 1 || admin.Subject.Organization[0] != AdminGroup {
		t.Errorf("admin subject = %v, want CN=%s O=%s", admin.Subject, AdminUser, AdminGroup)
	}
	clientUse := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := admin.Verify(clientUse); err != nil {
		t.Errorf("admin client certificate: %v", err)
	}
	controllerManager := mustCertificate(t, set, ControllerManagerCert)
	if controllerManager.Subject.CommonName != ControllerManagerUser {
		t.Errorf("controller-manager user = %s", controllerManager.Subject.CommonName)
	}
	if _, err := controllerManager.Verify(clientUse); err != nil {
		t.Errorf("controller-manager client certificate: %v", err)
	}

	frontProxyRoots := x509.NewCertPool()
	frontProxyRoots.AddCert(mustCertificate(t, set, FrontProxyCACert))
	frontProxy := mustCertificate(t, set, FrontProxyClientCert)
	if frontProxy.Subject.CommonName != FrontProxyUser {
		t.Errorf("front-proxy user = %s", frontProxy.Subject.CommonName)
	}
	frontProxyUse := x509.VerifyOptions{Roots: frontProxyRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := frontProxy.Verify(frontProxyUse); err != nil {
		t.Errorf("front-proxy client certificate: %v", err)
	}
	// Request headers must only be trusted from the front proxy, so its CA signs nothing else and vice versa.
	if _, err := frontProxy.Verify(clientUse); err == nil {
		t.Error("the front-proxy client certificate verifies against the cluster CA")
	}
	if _, err := admin.Verify(frontProxyUse); err == nil {
		t.Error("the admin certificate verifies against the front-proxy CA")
	}

	public := mustPEM(t, set, ServiceAccountPub, "PUBLIC KEY")
	if _, err := x509.ParsePKIXPublicKey(public.Bytes); err != nil {
		t.Errorf("service-account public key: %v", err)
	}
	private := mustPEM(t, set, ServiceAccountKey, "EC PRIVATE KEY")
	if _, err := x509.ParseECPrivateKey(private.Bytes); err != nil {
		t.Errorf("service-account private key: %v", err)
	}
	if info, err := os.Stat(set.Path(CAKey)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("CA key mode = %v (%v), want 0600", info.Mode().Perm(), err)
	}
}

func TestEnsureKeepsAnExistingSetAndFillsGaps(t *testing.T) {
	dir := t.TempDir()
	first, err := Ensure(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	caBefore := mustRead(t, first, CACert)
	adminBefore := mustRead(t, first, AdminCert)
	serverBefore := mustRead(t, first, APIServerCert)
	if err := os.Remove(first.Path(AdminCert)); err != nil {
		t.Fatal(err)
	}

	second, err := Ensure(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(caBefore, mustRead(t, second, CACert)) {
		t.Error("the CA was replaced")
	}
	if !bytes.Equal(serverBefore, mustRead(t, second, APIServerCert)) {
		t.Error("an existing serving certificate was replaced")
	}
	if bytes.Equal(adminBefore, mustRead(t, second, AdminCert)) {
		t.Error("the removed admin certificate was not issued again")
	}
	roots := x509.NewCertPool()
	roots.AddCert(mustCertificate(t, second, CACert))
	opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := mustCertificate(t, second, AdminCert).Verify(opts); err != nil {
		t.Errorf("the reissued admin certificate does not verify against the kept CA: %v", err)
	}
}

func TestANewCAReissuesEveryLeaf(t *testing.T) {
	dir := t.TempDir()
	first, err := Ensure(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	serverBefore := mustRead(t, first, APIServerCert)
	if err := os.Remove(first.Path(CAKey)); err != nil {
		t.Fatal(err)
	}
	second, err := Ensure(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(serverBefore, mustRead(t, second, APIServerCert)) {
		t.Fatal("the serving certificate of the old CA was kept")
	}
	roots := x509.NewCertPool()
	roots.AddCert(mustCertificate(t, second, CACert))
	opts := x509.VerifyOptions{Roots: roots, DNSName: "localhost"}
	if _, err := mustCertificate(t, second, APIServerCert).Verify(opts); err != nil {
		t.Errorf("serving certificate under the new CA: %v", err)
	}
}

func mustRead(t *testing.T, set Set, name string) []byte {
	t.Helper()
	data, err := set.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustPEM(t *testing.T, set Set, name, blockType string) *pem.Block {
	t.Helper()
	block, _ := pem.Decode(mustRead(t, set, name))
	if block == nil || block.Type != blockType {
		t.Fatalf("%s: no %s block", name, blockType)
	}
	return block
}

func mustCertificate(t *testing.T, set Set, name string) *x509.Certificate {
	t.Helper()
	cert, err := x509.ParseCertificate(mustPEM(t, set, name, "CERTIFICATE").Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestANodeGetsItsIdentitiesAndTheAPIServerItsAddress(t *testing.T) {
	dir := t.TempDir()
	serviceIP := net.IPv4(10, 96, 0, 1)
	// A directory first used without a node: the API server's certificate lacks the node's address.
	if _, err := Ensure(dir, Options{ServiceIP: serviceIP}); err != nil {
		t.Fatal(err)
	}
	nodeIP := net.IPv4(10, 244, 0, 1)
	set, err := Ensure(dir, Options{ServiceIP: serviceIP, Node: &NodeOptions{Name: "n1", IP: nodeIP}})
	if err != nil {
		t.Fatal(err)
	}
	apiServer := mustCertificate(t, set, APIServerCert)
	if !slices.ContainsFunc(apiServer.IPAddresses, nodeIP.Equal) {
		t.Fatalf("the API server's certificate names %v, not the node's address", apiServer.IPAddresses)
	}
	kubelet := mustCertificate(t, set, KubeletClientCert)
	if kubelet.Subject.CommonName != "system:node:n1" || !slices.Equal(kubelet.Subject.Organization, []string{NodesGroup}) {
		t.Fatalf("kubelet client certificate subject %v", kubelet.Subject)
	}
	serving := mustCertificate(t, set, KubeletServingCert)
	if !slices.ContainsFunc(serving.IPAddresses, nodeIP.Equal) || !slices.Contains(serving.DNSNames, "n1") {
		t.Fatalf("kubelet serving certificate names %v %v", serving.IPAddresses, serving.DNSNames)
	}
	for name, user := range map[string]string{SchedulerCert: SchedulerUser, ProxyCert: ProxyUser,
		APIServerKubeletClientCert: APIServerKubeletClientUser} {
		if cert := mustCertificate(t, set, name); cert.Subject.CommonName != user {
			t.Errorf("%s is for %q, want %q", name, cert.Subject.CommonName, user)
		}
	}
}
