// Package cgroups creates, empties and removes one cgroup path in every mounted cgroup hierarchy (v1, hybrid or
// v2), so that everything a run starts there can be found and killed, and nothing of it is left.
package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Hierarchies returns the mount points of the cgroup file systems (cgroup and cgroup2) from /proc/self/mountinfo.
func Hierarchies() ([]string, error) {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var mounts []string
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - cgroup cgroup rw,memory
		fields := strings.Fields(scanner.Text())
		dash := slices.Index(fields, "-")
		if dash < 0 || dash+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if fsType := fields[dash+1]; fsType == "cgroup" || fsType == "cgroup2" {
			mounts = append(mounts, unescape(fields[4]))
		}
	}
	return mounts, scanner.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space, …).
func unescape(path string) string {
	if !strings.Contains(path, `\`) {
		return path
	}
	var out strings.Builder
	for i := 0; i < len(path); i++ {
		if path[i] == '\\' && i+3 < len(path) {
			if n, err := strconv.ParseUint(path[i+1:i+4], 8, 8); err == nil {
				out.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		out.WriteByte(path[i])
	}
	return out.String()
}

// Create makes the cgroup path (e.g. /kh-1a2b3c4d/runtime) in every hierarchy. A new cpuset cgroup starts with no
// CPUs and no memory nodes, and a process cannot join it until both are set: they are copied from its parent.
func Create(path string) error {
	hierarchies, err := Hierarchies()
	if err != nil {
		return err
	}
	for _, root := range hierarchies {
		dir := root
		for part := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
			parent := dir
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("creating cgroup %s: %w", dir, err)
			}
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				if err := inherit(parent, dir, file); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// inherit copies a cpuset file from parent to dir when dir has it empty; hierarchies without it are skipped.
func inherit(parent, dir, file string) error {
	current, err := os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || strings.TrimSpace(string(current)) != "" {
		return err
	}
	value, err := os.ReadFile(filepath.Join(parent, file))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, file), value, 0o644); err != nil {
		return fmt.Errorf("setting %s of %s: %w", file, dir, err)
	}
	return nil
}

// Join moves the process pid into the cgroup path of every hierarchy where the path exists.
func Join(path string, pid int) error {
	hierarchies, err := Hierarchies()
	if err != nil {
		return err
	}
	for _, root := range hierarchies {
		procs := filepath.Join(root, path, "cgroup.procs")
		if _, err := os.Stat(procs); err != nil {
			continue
		}
		if err := os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving process %d into %s: %w", pid, filepath.Dir(procs), err)
		}
	}
	return nil
}

// Processes lists the processes in path and everything below it, in every hierarchy, without repeats.
func Processes(path string) ([]int, error) {
	hierarchies, err := Hierarchies()
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	var pids []int
	for _, root := range hierarchies {
		top := filepath.Join(root, path)
		err := filepath.WalkDir(top, func(dir string, entry os.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return filepath.SkipDir
				}
				return err
			}
			if !entry.IsDir() {
				return nil
			}
			data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				// A cgroup removed while walking.
				return nil
			}
			for field := range strings.FieldsSeq(string(data)) {
				if pid, err := strconv.Atoi(field); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return pids, nil
}

// Kill sends SIGKILL to every process in path and below until none is left or timeout passes (a process can fork
// while it is being killed; a killed one stays listed until it has been reaped).
func Kill(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids, err := Processes(path)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v are still in cgroup %s after %s", pids, path, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Remove removes path and every cgroup below it, deepest first, in every hierarchy. It fails while processes are
// left in them (Kill first). A path that does not exist is not an error.
func Remove(path string) error {
	hierarchies, err := Hierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, root := range hierarchies {
		top := filepath.Join(root, path)
		var dirs []string
		_ = filepath.WalkDir(top, func(dir string, entry os.DirEntry, err error) error {
			if err == nil && entry.IsDir() {
				dirs = append(dirs, dir)
			}
			return nil
		})
		// Walk order puts parents before children: remove in reverse.
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := removeDir(dirs[i]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeDir removes one cgroup, retrying briefly: a cgroup whose last process has just exited can still be busy.
func removeDir(dir string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("removing cgroup %s: %w", dir, err)
}
