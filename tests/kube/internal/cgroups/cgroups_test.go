package cgroups

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestAProcessMovedIntoACgroupIsFoundKilledAndTheCgroupRemoved(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	random := make([]byte, 4)
	_, _ = rand.Read(random)
	path := "/kh-test-" + hex.EncodeToString(random) + "/inner"
	if err := Create(path); err != nil {
		t.Fatal(err)
	}
	defer Remove(filepath.Dir(path))
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	if err := Join(path, sleeper.Process.Pid); err != nil {
		t.Fatal(err)
	}
	pids, err := Processes(filepath.Dir(path))
	if err != nil || !slices.Contains(pids, sleeper.Process.Pid) {
		t.Fatalf("Processes = %v, %v; want %d among them", pids, err, sleeper.Process.Pid)
	}
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	if err := Kill(filepath.Dir(path), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the process was not killed")
	}
	if err := Remove(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	hierarchies, _ := Hierarchies()
	for _, root := range hierarchies {
		if _, err := os.Stat(filepath.Join(root, filepath.Dir(path))); err == nil {
			t.Errorf("cgroup %s is left in %s", filepath.Dir(path), root)
		}
	}
}

func TestMountinfoEscapesAreUndone(t *testing.T) {
	if got := unescape(`/sys/fs/cgroup/a\040b`); got != "/sys/fs/cgroup/a b" {
		t.Fatalf("unescape = %q", got)
	}
}
