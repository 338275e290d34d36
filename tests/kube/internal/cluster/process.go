// Package cluster starts etcd, kube-apiserver and kube-controller-manager on loopback and stops them in order.
package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one running component: its own process group, its output in one log file.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	// err is the result of Wait, valid once done is closed.
	err error
	// stopping is closed when the launcher asked the process to stop, so its exit is not reported as a failure.
	stopping chan struct{}
	stopOnce sync.Once
}

var (
	spawnOnce     sync.Once
	spawnRequests chan func()
)

// onSpawnThread runs fn on one OS thread that lives as long as the launcher. Linux delivers a child's parent-death
// signal when the thread that forked it exits, not the process; Go may end an idle thread, so every child is forked
// from a goroutine locked to a thread that never ends. A node run also moves that thread into the node's network
// namespace, so that every component starts there.
func onSpawnThread(fn func() error) error {
	spawnOnce.Do(func() {
		spawnRequests = make(chan func())
		go func() {
			runtime.LockOSThread()
			for request := range spawnRequests {
				request()
			}
		}()
	})
	result := make(chan error, 1)
	spawnRequests <- func() { result <- fn() }
	return <-result
}

// spawn starts cmd from the spawning thread.
func spawn(cmd *exec.Cmd) error { return onSpawnThread(cmd.Start) }

// startProcess runs binary with args and env (nil: the launcher's), output to logPath (truncated), in a new process
// group, killed if the launcher dies.
func startProcess(name, binary string, args, env []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s: %w", name, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A terminal's Ctrl-C goes to the launcher only, which then stops the components in order.
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
	if err := spawn(cmd); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, binary, err)
	}
	p := &process{
		name:     name,
		logPath:  logPath,
		cmd:      cmd,
		done:     make(chan struct{}),
		stopping: make(chan struct{}),
	}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// running reports whether the process has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// errPortTaken marks the exit of a component that could not bind its port.
var errPortTaken = errors.New("a port was taken by another process")

// logTailLines is how much of a component's log an exit error quotes, so that a failed start explains itself even
// where the log directory is gone afterwards (a CI run's temporary directory).
const logTailLines = 20

// exitError describes how the process ended, with the end of its log; only valid once done is closed.
func (p *process) exitError() error {
	tail := logTail(p.logPath, logTailLines)
	var cause error
	if strings.Contains(tail, "address already in use") {
		cause = errPortTaken
	}
	status := "exited with status 0"
	if p.err != nil {
		status = "exited: " + p.err.Error()
	}
	if tail != "" {
		status += "; the end of its log:\n" + tail
	}
	if cause != nil {
		return fmt.Errorf("%s %s: %w", p.name, status, cause)
	}
	return fmt.Errorf("%s %s", p.name, status)
}

// logTail returns the last n lines of the file at path, or "" when it cannot be read.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// errForcedKill says that a component did not stop within its grace period and was killed.
var errForcedKill = errors.New("did not stop within its grace period and was killed")

// stop sends SIGTERM to the process group, waits up to grace, then kills the group. It returns errForcedKill when a
// kill was needed.
func (p *process) stop(grace time.Duration) error {
	p.stopOnce.Do(func() { close(p.stopping) })
	pgid := p.cmd.Process.Pid
	if p.running() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		// Anything the component left in its group goes too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return nil
	case <-timer.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	return fmt.Errorf("%s %w", p.name, errForcedKill)
}
