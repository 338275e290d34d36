package node

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// HostSysctls are the machine-wide settings the kubelet changes at start (vm.overcommit_memory=1,
// kernel.panic=10, kernel.panic_on_oops=1, …) when it is not told to refuse them instead (protectKernelDefaults,
// which would stop it on this machine). Their values from before the first live run are kept in
// RunsDir/host-sysctls.json and written back when the last run ends, or when a later start sweeps a killed one.
var HostSysctls = []string{
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
}

const hostSysctlsFile = "host-sysctls.json"

func sysctlPath(name string) string { return "/proc/sys/" + strings.ReplaceAll(name, ".", "/") }

// saveHostSysctls records the current values unless a record exists: then another run is alive (or was killed
// and has just been swept, which restored them) and the record holds the machine's own values.
func saveHostSysctls() error {
	path := filepath.Join(RunsDir, hostSysctlsFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	values := map[string]string{}
	for _, name := range HostSysctls {
		value, err := os.ReadFile(sysctlPath(name))
		if err != nil {
			continue
		}
		values[name] = strings.TrimSpace(string(value))
	}
	data, err := json.MarshalIndent(values, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// restoreHostSysctls writes the recorded values back and forgets them.
func restoreHostSysctls(logger *slog.Logger) error {
	path := filepath.Join(RunsDir, hostSysctlsFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	values := map[string]string{}
	if err := json.Unmarshal(data, &values); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	var errs []error
	for _, name := range HostSysctls {
		value, ok := values[name]
		if !ok {
			continue
		}
		current, err := os.ReadFile(sysctlPath(name))
		if err == nil && strings.TrimSpace(string(current)) == value {
			continue
		}
		if err := os.WriteFile(sysctlPath(name), []byte(value), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s=%s: %w", name, value, err))
			continue
		}
		logger.Info("restored a host setting the kubelet had changed", "sysctl", name, "value", value)
	}
	if len(errs) == 0 {
		errs = append(errs, os.Remove(path))
	}
	return errors.Join(errs...)
}

// Host directories the kubelet, containerd and libcni write to whatever they are told (paths compiled in): the
// container log symlinks, the device-plugin socket, the shims' sockets and the CNI result cache.
const (
	containerLogLinks = "/var/log/containers"
	devicePluginsDir  = "/var/lib/kubelet/device-plugins"
	shimSocketsDir    = "/run/containerd/s"
	cniResultsDir     = "/var/lib/cni/results"
)

// removeHostFiles removes what the run put in those directories: symlinks into its directory and CNI results
// of its network. Shim sockets are removed by the shims themselves; a killed shim's stays (its name is a hash that
// cannot be traced back to a run).
func removeHostFiles(r *Run, logger *slog.Logger) {
	if entries, err := os.ReadDir(containerLogLinks); err == nil {
		for _, entry := range entries {
			path := filepath.Join(containerLogLinks, entry.Name())
			if target, err := os.Readlink(path); err == nil && strings.HasPrefix(target, r.Dir+"/") {
				_ = os.Remove(path)
			}
		}
	}
	if entries, err := os.ReadDir(cniResultsDir); err == nil {
		for _, entry := range entries {
			if strings.HasPrefix(entry.Name(), r.CNINetwork()+"-") {
				_ = os.Remove(filepath.Join(cniResultsDir, entry.Name()))
			}
		}
	}
	_ = logger
}

// removeHostDirs removes, once no run is alive, the kubelet's device-plugin files and then each of those host
// directories (and their parents up to /var/lib, /var/log or /run) that are empty: a directory something else
// uses is not empty and stays.
func removeHostDirs() {
	for _, name := range []string{"kubelet.sock", "kubelet_internal_checkpoint"} {
		_ = os.Remove(filepath.Join(devicePluginsDir, name))
	}
	for _, dir := range []string{containerLogLinks, devicePluginsDir, shimSocketsDir, cniResultsDir} {
		for ; !slices.Contains([]string{"/var/lib", "/var/log", "/run", "/"}, dir); dir = filepath.Dir(dir) {
			if err := unix.Rmdir(dir); err != nil {
				break
			}
		}
	}
}

// UnmountBelow unmounts every mount point strictly below dir (dir itself stays), deepest first, detaching busy
// ones, until none is left: the kubelet's bind mount of its root directory and the pods' volumes, containerd's
// container root file systems, /dev/shm of sandboxes and the pods' network namespaces.
func UnmountBelow(dir string) error {
	dir = filepath.Clean(dir)
	for range 10 {
		points, err := mountPointsBelow(dir)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		// Deepest first (a mount stacked on another comes later in mountinfo, so the stable sort keeps it later
		// and the reverse walk takes it first); a failure shows in the next pass.
		slices.SortStableFunc(points, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })
		for i := len(points) - 1; i >= 0; i-- {
			_ = unix.Unmount(points[i], unix.MNT_DETACH)
		}
	}
	points, _ := mountPointsBelow(dir)
	if len(points) > 0 {
		return fmt.Errorf("still mounted below %s: %s", dir, strings.Join(points, " "))
	}
	return nil
}

// mountPointsBelow lists the mount points strictly below dir, in mountinfo order.
func mountPointsBelow(dir string) ([]string, error) {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var points []string
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 5 {
			continue
		}
		point := unescapeMountinfo(fields[4])
		if strings.HasPrefix(point, dir+"/") {
			points = append(points, point)
		}
	}
	return points, scanner.Err()
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space, …).
func unescapeMountinfo(path string) string {
	if !strings.Contains(path, `\`) {
		return path
	}
	var out strings.Builder
	for i := 0; i < len(path); i++ {
		if path[i] == '\\' && i+3 < len(path) {
			var n byte
			ok := true
			for _, c := range path[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				n = n*8 + byte(c-'0')
			}
			if ok {
				out.WriteByte(n)
				i += 3
				continue
			}
		}
		out.WriteByte(path[i])
	}
	return out.String()
}
