package kubeconfig

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestWriteProducesALoadableAdminConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	id := Identity{User: "someone", Cert: []byte("cert"), Key: []byte("key")}
	if err := Write(path, "https://127.0.0.1:6443", []byte("ca"), id); err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if config.CurrentContext != Context {
		t.Errorf("current context = %q", config.CurrentContext)
	}
	cluster := config.Clusters[Context]
	if cluster == nil || cluster.Server != "https://127.0.0.1:6443" || string(cluster.CertificateAuthorityData) != "ca" {
		t.Errorf("cluster = %+v", cluster)
	}
	user := config.AuthInfos["someone"]
	if user == nil || string(user.ClientCertificateData) != "cert" || string(user.ClientKeyData) != "key" {
		t.Errorf("user = %+v", user)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v (%v), want 0600: the file holds a private key", info.Mode().Perm(), err)
	}
}
