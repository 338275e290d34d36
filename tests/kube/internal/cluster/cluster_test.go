package cluster

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestControllerEnabledReadsTheListAsTheControllerManagerDoes(t *testing.T) {
	cases := []struct {
		controllers []string
		want        bool
	}{
		{DefaultControllers, true},
		{[]string{"namespace-controller"}, false},
		{[]string{"*"}, true},
		{[]string{"*", "-serviceaccount-controller"}, false},
		{[]string{"serviceaccount-controller", "-serviceaccount-controller"}, false},
	}
	for _, c := range cases {
		if got := controllerEnabled(c.controllers, "serviceaccount-controller"); got != c.want {
			t.Errorf("controllerEnabled(%v) = %v, want %v", c.controllers, got, c.want)
		}
	}
}

func TestFreePortsAreDistinct(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	avoid := held.Addr().(*net.TCPAddr).Port
	ports, err := freePorts(4, avoid)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{avoid: true}
	for _, port := range ports {
		if port <= 0 || seen[port] {
			t.Fatalf("ports %v are not distinct positive numbers", ports)
		}
		seen[port] = true
	}
}

func TestASecondLockOnTheSameDirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	first, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if second, err := LockDir(dir); err == nil {
		_ = second.Close()
		t.Fatal("a second lock was granted while the first is held")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := LockDir(dir)
	if err != nil {
		t.Fatalf("the lock was not released: %v", err)
	}
	_ = again.Close()
}

func TestAComponentThatCouldNotBindSaysSoWithItsLog(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "kube-apiserver.log")
	log := "I1124 starting\nE1124 failed to listen on 127.0.0.1:6443: listen tcp 127.0.0.1:6443: bind: address already in use\n"
	if err := os.WriteFile(logPath, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &process{name: "kube-apiserver", logPath: logPath, err: errors.New("exit status 1")}
	err := p.exitError()
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("exitError() = %v, want it to wrap errPortTaken", err)
	}
	if !strings.Contains(err.Error(), "bind: address already in use") {
		t.Fatalf("exitError() = %v, want the end of the log quoted", err)
	}

	if err := os.WriteFile(logPath, []byte("E1124 invalid flag --nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = p.exitError()
	if errors.Is(err, errPortTaken) || !strings.Contains(err.Error(), "invalid flag --nope") {
		t.Fatalf("exitError() = %v, want the log quoted and no errPortTaken", err)
	}
}

func TestTheNodesComponentsGetNoProxyAndTheSbinDirectories(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	t.Setenv("no_proxy", "example.invalid")
	t.Setenv("PATH", "/usr/bin:/bin")
	env := nodeEnv()
	var path string
	for _, entry := range env {
		name, value, _ := strings.Cut(entry, "=")
		if strings.HasSuffix(strings.ToLower(name), "_proxy") {
			t.Errorf("%s reaches the components", entry)
		}
		if name == "PATH" {
			path = value
		}
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/sbin"} {
		if !strings.Contains(":"+path+":", ":"+dir+":") {
			t.Errorf("PATH %q lacks %s", path, dir)
		}
	}
}
