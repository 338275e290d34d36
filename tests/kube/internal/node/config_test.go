package node

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	proxyconfig "k8s.io/kube-proxy/config/v1alpha1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// The kubelet and kube-proxy decode their files strictly: a misspelled or misplaced field stops them at start.
// Decoding strictly into their own types here finds that without starting them.
func TestTheKubeletConfigurationHasOnlyFieldsTheKubeletKnows(t *testing.T) {
	layout := Layout{Dir: "/tmp/kh"}
	data, err := layout.KubeletYAML(KubeletOptions{CgroupRoot: "/kh-00000000", CACert: "/ca", TLSCert: "/c", TLSKey: "/k"})
	if err != nil {
		t.Fatal(err)
	}
	var config kubeletconfig.KubeletConfiguration
	if err := yaml.UnmarshalStrict([]byte(data), &config); err != nil {
		t.Fatalf("the kubelet would refuse its configuration: %v\n%s", err, data)
	}
	if config.CgroupRoot != "/kh-00000000" || config.FailCgroupV1 == nil || *config.FailCgroupV1 ||
		config.FailSwapOn == nil || *config.FailSwapOn || config.ResolverConfig == nil ||
		!strings.HasPrefix(*config.ResolverConfig, "/tmp/kh/") || config.Address != NodeIP {
		t.Fatalf("unexpected kubelet configuration: %+v", config)
	}
	if !strings.HasPrefix(config.ContainerRuntimeEndpoint, "unix:///tmp/kh/") ||
		!strings.HasPrefix(config.PodLogsDir, "/tmp/kh/") || !strings.HasPrefix(config.VolumePluginDir, "/tmp/kh/") {
		t.Fatalf("a kubelet path is outside the directory: %+v", config)
	}
}

func TestTheProxyConfigurationHasOnlyFieldsKubeProxyKnows(t *testing.T) {
	data, err := Layout{Dir: "/tmp/kh"}.ProxyYAML()
	if err != nil {
		t.Fatal(err)
	}
	var config proxyconfig.KubeProxyConfiguration
	if err := yaml.UnmarshalStrict([]byte(data), &config); err != nil {
		t.Fatalf("kube-proxy would refuse its configuration: %v\n%s", err, data)
	}
	if config.Mode != "iptables" || config.HostnameOverride != NodeName || config.Conntrack.MaxPerCore == nil ||
		*config.Conntrack.MaxPerCore != 0 {
		t.Fatalf("unexpected kube-proxy configuration: %+v", config)
	}
}

func TestContainerdKeepsEverythingBelowTheDirectory(t *testing.T) {
	data := Layout{Dir: "/tmp/kh"}.ContainerdTOML(ContainerdOptions{ShimPath: "/bin/shim", RuncPath: "/usr/sbin/runc",
		CNIBinDir: "/usr/lib/cni", SandboxImage: RegistryHost + "/pause:x"})
	var config struct {
		Version  int
		Root     string
		State    string
		Temp     string
		GRPC     struct{ Address string } `toml:"grpc"`
		TTRPC    struct{ Address string } `toml:"ttrpc"`
		Disabled []string                 `toml:"disabled_plugins"`
		Plugins  map[string]any
	}
	if _, err := toml.Decode(data, &config); err != nil {
		t.Fatalf("containerd's configuration is not TOML: %v\n%s", err, data)
	}
	for _, path := range []string{config.Root, config.State, config.Temp, config.GRPC.Address, config.TTRPC.Address} {
		if !strings.HasPrefix(path, "/tmp/kh/") {
			t.Errorf("containerd path %q is outside the directory", path)
		}
	}
	runtime, _ := config.Plugins["io.containerd.cri.v1.runtime"].(map[string]any)
	if runtime["netns_mounts_under_state_dir"] != true || runtime["restrict_oom_score_adj"] != true {
		t.Errorf("the CRI runtime settings are missing: %v", runtime)
	}
	images, _ := config.Plugins["io.containerd.cri.v1.images"].(map[string]any)
	pinned, _ := images["pinned_images"].(map[string]any)
	if pinned["sandbox"] != RegistryHost+"/pause:x" {
		t.Errorf("sandbox image %v", pinned["sandbox"])
	}
	if !strings.Contains(strings.Join(config.Disabled, " "), "io.containerd.nri.v1.nri") {
		t.Errorf("NRI (a socket in /var/run/nri) is not disabled: %v", config.Disabled)
	}
}

func TestTheCNINetworkIsTheRunsBridgeWithItsStateBelowTheDirectory(t *testing.T) {
	data, err := Layout{Dir: "/tmp/kh"}.CNIConfig("kh-00000000")
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type        string `json:"type"`
			Bridge      string `json:"bridge"`
			HairpinMode bool   `json:"hairpinMode"`
			IPAM        struct {
				DataDir string `json:"dataDir"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(data), &config); err != nil {
		t.Fatal(err)
	}
	bridge := config.Plugins[0]
	if config.Name != "kh-00000000" || bridge.Type != "bridge" || bridge.Bridge != BridgeName || !bridge.HairpinMode ||
		!strings.HasPrefix(bridge.IPAM.DataDir, "/tmp/kh/") {
		t.Fatalf("unexpected CNI configuration: %s", data)
	}
}

func TestMountinfoEscapesAreUndone(t *testing.T) {
	if got := unescapeMountinfo(`/tmp/a\040b/c\011d`); got != "/tmp/a b/c\td" {
		t.Fatalf("unescapeMountinfo = %q", got)
	}
}
