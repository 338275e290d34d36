// Package kubeconfig writes client configurations with the CA and the client credentials embedded.
package kubeconfig

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Identity is what a kubeconfig authenticates with: a client certificate and its key, PEM encoded.
type Identity struct {
	User string
	Cert []byte
	Key  []byte
}

// Context is the name of the only context (and cluster) in every kubeconfig written here.
const Context = "kube-harness"

// Write writes a kubeconfig for server that trusts caPEM and authenticates as id, through a temporary file so that
// a reader never sees half of it.
func Write(path, server string, caPEM []byte, id Identity) error {
	config := clientcmdapi.NewConfig()
	config.Clusters[Context] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	config.AuthInfos[id.User] = &clientcmdapi.AuthInfo{ClientCertificateData: id.Cert, ClientKeyData: id.Key}
	config.Contexts[Context] = &clientcmdapi.Context{Cluster: Context, AuthInfo: id.User, Namespace: "default"}
	config.CurrentContext = Context
	data, err := clientcmd.Write(*config)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig %s: %w", path, err)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming kubeconfig %s into place: %w", path, err)
	}
	return nil
}
