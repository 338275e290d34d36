// Package node keeps track of what a node run puts on the machine outside its directory — a network namespace,
// cgroups, mounts, a few host files and host sysctls — and removes it: at the end of the run, or at the start of a
// later one when the launcher of a run was killed.
package node

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"wasm-reconciler/tests/kube/internal/cgroups"
	"wasm-reconciler/tests/kube/internal/netns"
)

// RunsDir holds one directory per node run, RunsDir/<id>/, with run.json and a lock file its launcher holds for
// as long as it lives. A run whose lock is free belongs to a dead launcher: the next node start sweeps it.
const RunsDir = "/run/kube-harness"

// IDPrefix starts every run ID, and so the names of the run's network namespace and cgroup.
const IDPrefix = "kh-"

// Run is one node run: what it created outside its directory, so that all of it can be found again.
type Run struct {
	// ID names the network namespace (/run/netns/ID) and the cgroup (/ID in every hierarchy).
	ID string `json:"id"`
	// Dir is the launcher's directory (absolute); everything mounted below it belongs to the run.
	Dir string `json:"dir"`
	// LauncherPID is informative: the lock, not the PID, says whether the run is alive.
	LauncherPID int `json:"launcherPid"`
	lock        *os.File
}

// CgroupRoot is the run's cgroup path in every hierarchy; the kubelet's cgroupRoot.
func (r *Run) CgroupRoot() string { return "/" + r.ID }

// RuntimeCgroup holds containerd and so the shims it starts, which outlive containerd by design.
func (r *Run) RuntimeCgroup() string { return r.CgroupRoot() + "/runtime" }

// PodsCgroup is where the kubelet puts every pod (cgroupsPerQOS under cgroupRoot).
func (r *Run) PodsCgroup() string { return r.CgroupRoot() + "/kubepods" }

// CNINetwork names the run's CNI network; libcni's result cache (/var/lib/cni/results, not configurable through
// containerd) names its files after it.
func (r *Run) CNINetwork() string { return r.ID }

// globalLock serialises registering, sweeping and the host sysctls among launchers.
func globalLock() (*os.File, error) {
	if err := os.MkdirAll(RunsDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", RunsDir, err)
	}
	file, err := os.OpenFile(filepath.Join(RunsDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		_ = file.Close()
		return nil, err
	}
	return file, nil
}

// Register sweeps the runs of dead launchers, then creates a new run for dir, locked by this process until Close.
func Register(dir string, logger *slog.Logger) (*Run, error) {
	lock, err := globalLock()
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	sweepDead(logger)
	random := make([]byte, 4)
	if _, err := io.ReadFull(rand.Reader, random); err != nil {
		return nil, err
	}
	run := &Run{ID: IDPrefix + hex.EncodeToString(random), Dir: dir, LauncherPID: os.Getpid()}
	runDir := filepath.Join(RunsDir, run.ID)
	if err := os.Mkdir(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", runDir, err)
	}
	// Close on exec (as every file Go opens): a component that inherited the lock would keep a dead run alive.
	if run.lock, err = os.OpenFile(filepath.Join(runDir, "lock"), os.O_CREATE|os.O_RDWR, 0o644); err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(run.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil, fmt.Errorf("locking %s: %w", runDir, err)
	}
	data, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(runDir, "run.json"), data, 0o644); err != nil {
		return nil, err
	}
	if err := saveHostSysctls(); err != nil {
		return nil, err
	}
	return run, nil
}

// sweepDead cleans up every run whose launcher is gone. The caller holds the global lock.
func sweepDead(logger *slog.Logger) {
	entries, err := os.ReadDir(RunsDir)
	if err != nil {
		return
	}
	for _, entry := range entries {
		if !entry.IsDir() || !strings.HasPrefix(entry.Name(), IDPrefix) {
			continue
		}
		runDir := filepath.Join(RunsDir, entry.Name())
		lock, err := os.OpenFile(filepath.Join(runDir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			continue
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			// Alive.
			_ = lock.Close()
			continue
		}
		run := &Run{ID: entry.Name()}
		if data, err := os.ReadFile(filepath.Join(runDir, "run.json")); err == nil {
			_ = json.Unmarshal(data, run)
		}
		run.ID = entry.Name()
		logger.Warn("removing what a killed launcher left", "run", run.ID, "dir", run.Dir, "pid", run.LauncherPID)
		if err := run.cleanup(logger); err != nil {
			logger.Warn("the leftovers of a killed launcher could not all be removed", "run", run.ID, "error", err)
		}
		_ = lock.Close()
	}
}

// KillPods kills every process in the pods' cgroups (containers and their sandboxes), e.g. after the kubelet has
// stopped and before containerd does.
func (r *Run) KillPods(timeout time.Duration) error { return cgroups.Kill(r.PodsCgroup(), timeout) }

// Close removes everything the run left outside its processes: whatever still runs in its cgroups (shims,
// containers), mounts below its directory, its cgroups, its network namespace, its files in host directories; then
// the host sysctls come back when no other run is alive, and the run's record goes. The launcher calls it after
// stopping the components.
func (r *Run) Close(logger *slog.Logger) error {
	lock, err := globalLock()
	if err != nil {
		return err
	}
	defer lock.Close()
	err = r.cleanup(logger)
	_ = r.lock.Close()
	return err
}

// cleanup removes a run's leftovers and its record; restores the host sysctls when it was the last run. The caller
// holds the global lock.
func (r *Run) cleanup(logger *slog.Logger) error {
	var errs []error
	if err := cgroups.Kill(r.CgroupRoot(), 20*time.Second); err != nil {
		errs = append(errs, err)
	}
	if r.Dir != "" {
		if err := UnmountBelow(r.Dir); err != nil {
			errs = append(errs, err)
		}
		removeHostFiles(r, logger)
	}
	if err := cgroups.Remove(r.CgroupRoot()); err != nil {
		errs = append(errs, err)
	}
	if err := netns.Delete(r.ID); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(filepath.Join(RunsDir, r.ID)); err != nil {
			errs = append(errs, err)
		}
	}
	if !anotherRunAlive(r.ID) {
		if err := restoreHostSysctls(logger); err != nil {
			errs = append(errs, err)
		}
		removeHostDirs()
	}
	return errors.Join(errs...)
}

// anotherRunAlive says whether a run other than id holds its lock.
func anotherRunAlive(id string) bool {
	entries, _ := os.ReadDir(RunsDir)
	for _, entry := range entries {
		if !entry.IsDir() || entry.Name() == id || !strings.HasPrefix(entry.Name(), IDPrefix) {
			continue
		}
		lock, err := os.OpenFile(filepath.Join(RunsDir, entry.Name(), "lock"), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		_ = lock.Close()
		if err != nil {
			return true
		}
	}
	return false
}
