// Package netns creates named network namespaces and works inside them from a process that stays outside.
//
// A network namespace belongs to a thread, not to a process: a goroutine locked to an OS thread that has entered a
// namespace creates its sockets there, and so does a process it forks. Each Namespace has one such thread that
// never leaves it and never runs anything else (it is never unlocked, so Go cannot hand it to another goroutine).
package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is where named namespaces are bound, as `ip netns` does it, so that `ip netns exec NAME …` and
// `nsenter --net=/run/netns/NAME` reach them.
const Dir = "/run/netns"

// Namespace is a named network namespace with a thread inside it.
type Namespace struct {
	Name     string
	Path     string
	requests chan func()
}

// Create makes a new network namespace and binds it at Dir/name, so that it outlives the thread that made it.
func Create(name string) (*Namespace, error) {
	path := filepath.Join(Dir, name)
	if err := os.MkdirAll(Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", Dir, err)
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return nil, fmt.Errorf("creating the mount point of network namespace %s: %w", name, err)
	}
	_ = file.Close()
	ns := &Namespace{Name: name, Path: path, requests: make(chan func())}
	started := make(chan error, 1)
	go ns.serve(started, func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding the network namespace at %s: %w", path, err)
		}
		return nil
	})
	if err := <-started; err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	return ns, nil
}

// Open returns the namespace bound at Dir/name.
func Open(name string) (*Namespace, error) {
	path := filepath.Join(Dir, name)
	ns := &Namespace{Name: name, Path: path, requests: make(chan func())}
	started := make(chan error, 1)
	go ns.serve(started, func() error { return enter(path) })
	if err := <-started; err != nil {
		return nil, err
	}
	return ns, nil
}

// enter moves the calling thread into the namespace bound at path.
func enter(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering network namespace %s: %w", path, err)
	}
	return nil
}

// EnterFile moves the calling thread into the namespace file refers to (an open /proc/…/ns/net or a bound name),
// under the same rules as Enter.
func EnterFile(file *os.File) error {
	if err := unix.Setns(int(file.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering network namespace %s: %w", file.Name(), err)
	}
	return nil
}

// Enter moves the calling goroutine's thread into the namespace at path for good. The caller must have locked the
// goroutine to its thread and must never unlock it: an unlocked thread in another namespace could run any goroutine.
func Enter(path string) error { return enter(path) }

// serve locks this goroutine to its thread, enters the namespace with join, then runs requests on that thread. It
// never unlocks the thread: when the goroutine ends (it does not), Go ends the thread with it.
func (ns *Namespace) serve(started chan<- error, join func() error) {
	runtime.LockOSThread()
	if err := join(); err != nil {
		started <- err
		// Locked and possibly half-moved: returning ends the thread.
		return
	}
	started <- nil
	for request := range ns.requests {
		request()
	}
}

// Do runs fn on the namespace's thread: sockets it creates, files it opens under /proc/sys/net and processes it
// starts belong to the namespace. Requests run one at a time.
func (ns *Namespace) Do(fn func() error) error {
	result := make(chan error, 1)
	ns.requests <- func() { result <- fn() }
	return <-result
}

// DialContext connects from inside the namespace (for an address of the namespace, such as its 127.0.0.1). The
// socket is created on the namespace's thread; once connected it works from any goroutine.
func (ns *Namespace) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := ns.Do(func() error {
		var err error
		var dialer net.Dialer
		conn, err = dialer.DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// WriteSysctl sets a sysctl of the namespace (name as in sysctl(8), e.g. net.ipv4.ip_forward): /proc/sys/net is
// the namespace of the thread that opens it.
func (ns *Namespace) WriteSysctl(name, value string) error {
	return ns.Do(func() error {
		path := "/proc/sys/" + strings.ReplaceAll(name, ".", "/")
		if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
			return fmt.Errorf("setting %s=%s in network namespace %s: %w", name, value, ns.Name, err)
		}
		return nil
	})
}

// Delete unbinds and removes Dir/name, as `ip netns delete` does. The namespace itself goes away once no process,
// thread or open file holds it. A namespace that is not there is not an error.
func Delete(name string) error {
	path := filepath.Join(Dir, name)
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// Close ends the namespace's thread (Go ends a thread whose goroutine returns while locked to it), so that the
// launcher no longer holds the namespace.
func (ns *Namespace) Close() { close(ns.requests) }
