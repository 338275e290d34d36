// Package pki creates and reloads the certificates and keys a loopback control plane needs.
package pki

import (
	"crypto"
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
	"os"
	"path/filepath"
	"slices"
	"time"
)

// File names inside the PKI directory. They are part of the launcher's documented layout.
const (
	CACert                   = "ca.crt"
	CAKey                    = "ca.key"
	APIServerCert            = "apiserver.crt"
	APIServerKey             = "apiserver.key"
	AdminCert                = "admin.crt"
	AdminKey                 = "admin.key"
	ControllerManagerCert    = "controller-manager.crt"
	ControllerManagerKey     = "controller-manager.key"
	ControllerManagerTLSCert = "controller-manager-serving.crt"
	ControllerManagerTLSKey  = "controller-manager-serving.key"
	ServiceAccountKey        = "sa.key"
	ServiceAccountPub        = "sa.pub"
	// The front proxy CA signs the client certificate the API server presents to aggregated API servers, which
	// they (and the controller manager's delegated authentication) trust for the X-Remote-* request headers.
	FrontProxyCACert     = "front-proxy-ca.crt"
	FrontProxyCAKey      = "front-proxy-ca.key"
	FrontProxyClientCert = "front-proxy-client.crt"
	FrontProxyClientKey  = "front-proxy-client.key"
)

// Files of a node (Options.Node): the kubelet's client and serving pairs, the API server's client pair for the
// kubelet's API, and the client pairs of kube-scheduler and kube-proxy, with the scheduler's serving pair.
const (
	KubeletClientCert          = "kubelet-client.crt"
	KubeletClientKey           = "kubelet-client.key"
	KubeletServingCert         = "kubelet-serving.crt"
	KubeletServingKey          = "kubelet-serving.key"
	APIServerKubeletClientCert = "apiserver-kubelet-client.crt"
	APIServerKubeletClientKey  = "apiserver-kubelet-client.key"
	SchedulerCert              = "scheduler.crt"
	SchedulerKey               = "scheduler.key"
	SchedulerTLSCert           = "scheduler-serving.crt"
	SchedulerTLSKey            = "scheduler-serving.key"
	ProxyCert                  = "kube-proxy.crt"
	ProxyKey                   = "kube-proxy.key"
)

// AdminUser and AdminGroup name the identity of the admin client certificate; system:masters bypasses RBAC.
const (
	AdminUser  = "kube-harness-admin"
	AdminGroup = "system:masters"
	// ControllerManagerUser is the user the RBAC bootstrap policy binds to the controller manager's role.
	ControllerManagerUser = "system:kube-controller-manager"
	// FrontProxyUser is the name aggregated API servers accept the X-Remote-* headers from.
	FrontProxyUser = "front-proxy-client"
	// The users the RBAC bootstrap policy binds the scheduler's and kube-proxy's roles to, and the group of
	// nodes (the Node authorizer and NodeRestriction read a kubelet's node name from system:node:<name>).
	SchedulerUser = "system:kube-scheduler"
	ProxyUser     = "system:kube-proxy"
	NodesGroup    = "system:nodes"
	// APIServerKubeletClientUser is how the API server authenticates to kubelets (logs, exec, port-forward);
	// system:masters lets the kubelet's webhook authorisation allow it everything, as kubeadm's used to.
	APIServerKubeletClientUser = "kube-apiserver-kubelet-client"
)

// NodeUser is the user a kubelet authenticates as.
func NodeUser(name string) string { return "system:node:" + name }

// validity is long enough that a directory kept for local use does not expire under a person.
const validity = 10 * 365 * 24 * time.Hour

// Set is a PKI directory whose files all exist.
type Set struct {
	Dir string
}

// Path returns the full path of one of the files above.
func (s Set) Path(name string) string { return filepath.Join(s.Dir, name) }

// Read returns the content of one of the files above.
func (s Set) Read(name string) ([]byte, error) { return os.ReadFile(s.Path(name)) }

// Options describes the names the serving certificates must carry.
type Options struct {
	// ServiceIP is the first address of the service CIDR: the ClusterIP of the `kubernetes` Service.
	ServiceIP net.IP
	// Node, when set, adds its address to the API server's certificate and creates the node's files.
	Node *NodeOptions
}

// NodeOptions name the node and its address.
type NodeOptions struct {
	Name string
	IP   net.IP
}

// Ensure returns the PKI in dir, creating every missing file. A CA that is reused keeps signing: the certificates
// it issued before stay valid, so a kept directory keeps working with kubeconfigs written earlier.
func Ensure(dir string, opts Options) (Set, error) {
	set := Set{Dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return set, fmt.Errorf("creating PKI directory: %w", err)
	}
	ca, caKey, err := ensureCA(set, CACert, CAKey, "kube-harness-ca",
		APIServerCert, AdminCert, ControllerManagerCert, ControllerManagerTLSCert, KubeletClientCert,
		KubeletServingCert, APIServerKubeletClientCert, SchedulerCert, SchedulerTLSCert, ProxyCert)
	if err != nil {
		return set, err
	}
	frontProxyCA, frontProxyCAKey, err := ensureCA(set, FrontProxyCACert, FrontProxyCAKey, "kube-harness-front-proxy-ca",
		FrontProxyClientCert)
	if err != nil {
		return set, err
	}
	apiServerIPs := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, opts.ServiceIP}
	if opts.Node != nil {
		apiServerIPs = append(apiServerIPs, opts.Node.IP)
	}
	// A certificate issued for a directory first used without a node lacks the node's address: issue it again.
	if exists(set.Path(APIServerCert)) && !coversIPs(set.Path(APIServerCert), apiServerIPs) {
		if err := os.Remove(set.Path(APIServerCert)); err != nil {
			return set, fmt.Errorf("removing an API server certificate without the node's address: %w", err)
		}
	}
	type leaf struct {
		cert, key string
		template  *x509.Certificate
		ca        *x509.Certificate
		caKey     crypto.Signer
	}
	leaves := []leaf{
		{APIServerCert, APIServerKey, servingTemplate("kube-apiserver", []string{
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		}, apiServerIPs), ca, caKey},
		{AdminCert, AdminKey, clientTemplate(AdminUser, AdminGroup), ca, caKey},
		{ControllerManagerCert, ControllerManagerKey, clientTemplate(ControllerManagerUser, ""), ca, caKey},
		{ControllerManagerTLSCert, ControllerManagerTLSKey, servingTemplate("kube-controller-manager",
			[]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}), ca, caKey},
		{FrontProxyClientCert, FrontProxyClientKey, clientTemplate(FrontProxyUser, ""), frontProxyCA, frontProxyCAKey},
	}
	if node := opts.Node; node != nil {
		loopback := net.IPv4(127, 0, 0, 1)
		leaves = append(leaves,
			leaf{KubeletClientCert, KubeletClientKey, clientTemplate(NodeUser(node.Name), NodesGroup), ca, caKey},
			leaf{KubeletServingCert, KubeletServingKey, servingTemplate(node.Name, []string{node.Name, "localhost"},
				[]net.IP{node.IP, loopback}), ca, caKey},
			leaf{APIServerKubeletClientCert, APIServerKubeletClientKey,
				clientTemplate(APIServerKubeletClientUser, AdminGroup), ca, caKey},
			leaf{SchedulerCert, SchedulerKey, clientTemplate(SchedulerUser, ""), ca, caKey},
			leaf{SchedulerTLSCert, SchedulerTLSKey, servingTemplate("kube-scheduler", []string{"localhost"},
				[]net.IP{loopback}), ca, caKey},
			leaf{ProxyCert, ProxyKey, clientTemplate(ProxyUser, ""), ca, caKey},
		)
	}
	for _, leaf := range leaves {
		if exists(set.Path(leaf.cert)) && exists(set.Path(leaf.key)) {
			continue
		}
		if err := issue(set, leaf.cert, leaf.key, leaf.template, leaf.ca, leaf.caKey); err != nil {
			return set, err
		}
	}
	if err := ensureServiceAccountKey(set); err != nil {
		return set, err
	}
	return set, nil
}

// ensureCA loads the CA certName/keyName or creates it; a new CA removes the leaves it is to sign.
func ensureCA(set Set, certName, keyName, commonName string, leaves ...string) (*x509.Certificate, crypto.Signer, error) {
	if exists(set.Path(certName)) && exists(set.Path(keyName)) {
		cert, err := readCertificate(set.Path(certName))
		if err != nil {
			return nil, nil, err
		}
		key, err := readKey(set.Path(keyName))
		if err != nil {
			return nil, nil, err
		}
		return cert, key, nil
	}
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	// Every leaf is issued again under a new CA.
	for _, name := range leaves {
		if err := os.Remove(set.Path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("removing %s issued by an older CA: %w", name, err)
		}
	}
	if err := writeKey(set.Path(keyName), key); err != nil {
		return nil, nil, err
	}
	if err := writePEM(set.Path(certName), "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func servingTemplate(commonName string, dnsNames []string, ips []net.IP) *x509.Certificate {
	var addresses []net.IP
	for _, ip := range ips {
		if ip != nil {
			addresses = append(addresses, ip)
		}
	}
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    dnsNames,
		IPAddresses: addresses,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}

func clientTemplate(user, group string) *x509.Certificate {
	subject := pkix.Name{CommonName: user}
	if group != "" {
		subject.Organization = []string{group}
	}
	return &x509.Certificate{
		Subject:     subject,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

func issue(set Set, certName, keyName string, template, ca *x509.Certificate, caKey crypto.Signer) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	serial, err := newSerial()
	if err != nil {
		return err
	}
	now := time.Now()
	template.SerialNumber = serial
	template.NotBefore = now.Add(-time.Hour)
	template.NotAfter = now.Add(validity)
	template.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, template, ca, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("signing %s: %w", certName, err)
	}
	if err := writeKey(set.Path(keyName), key); err != nil {
		return err
	}
	return writePEM(set.Path(certName), "CERTIFICATE", der, 0o644)
}

func ensureServiceAccountKey(set Set) error {
	if exists(set.Path(ServiceAccountKey)) && exists(set.Path(ServiceAccountPub)) {
		return nil
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	public, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("encoding the service-account public key: %w", err)
	}
	if err := writeKey(set.Path(ServiceAccountKey), key); err != nil {
		return err
	}
	return writePEM(set.Path(ServiceAccountPub), "PUBLIC KEY", public, 0o644)
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ECDSA key: %w", err)
	}
	return key, nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return serial, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

// writePEM writes through a temporary file so that a crash never leaves half a file behind.
func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %s into place: %w", filepath.Base(path), err)
	}
	return nil
}

func readCertificate(path string) (*x509.Certificate, error) {
	block, err := readPEM(path, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return cert, nil
}

func readKey(path string) (crypto.Signer, error) {
	block, err := readPEM(path, "EC PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return key, nil
}

func readPEM(path, blockType string) (*pem.Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != blockType {
		return nil, fmt.Errorf("%s holds no %s block", path, blockType)
	}
	return block, nil
}

// coversIPs says whether the certificate at path names every address in ips (nil ones aside).
func coversIPs(path string, ips []net.IP) bool {
	cert, err := readCertificate(path)
	if err != nil {
		return false
	}
	for _, ip := range ips {
		if ip != nil && !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
