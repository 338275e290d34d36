// Package forward relays TCP connections from a loopback port of the launcher's network namespace to an address
// that only another namespace can reach: the only way in to the node's namespace, which has no link to the
// machine's.
package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"
)

// DialFunc connects to the target, from wherever it is reachable.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Forwarder accepts on 127.0.0.1 and relays each connection to its target.
type Forwarder struct {
	name     string
	target   string
	dial     DialFunc
	listener net.Listener
	logger   *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Listen listens on 127.0.0.1:port (0: a free port) and relays to target through dial.
func Listen(name string, port int, target string, dial DialFunc, logger *slog.Logger) (*Forwarder, error) {
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening for %s on 127.0.0.1:%d: %w", name, port, err)
	}
	f := &Forwarder{name: name, target: target, dial: dial, listener: listener, logger: logger,
		conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Port is the port the forwarder listens on.
func (f *Forwarder) Port() int { return f.listener.Addr().(*net.TCPAddr).Port }

func (f *Forwarder) accept() {
	defer f.wg.Done()
	for {
		conn, err := f.listener.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				f.logger.Warn("forwarder stopped accepting", "forwarder", f.name, "error", err)
			}
			return
		}
		if !f.track(conn) {
			_ = conn.Close()
			return
		}
		f.wg.Add(1)
		go f.relay(conn)
	}
}

// track remembers a connection so that Close can end it; false once the forwarder is closed.
func (f *Forwarder) track(conn net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[conn] = struct{}{}
	return true
}

func (f *Forwarder) untrack(conn net.Conn) {
	f.mu.Lock()
	delete(f.conns, conn)
	f.mu.Unlock()
	_ = conn.Close()
}

func (f *Forwarder) relay(client net.Conn) {
	defer f.wg.Done()
	defer f.untrack(client)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	upstream, err := f.dial(ctx, "tcp", f.target)
	cancel()
	if err != nil {
		// The client sees its connection closed, as it would see a refused one.
		f.logger.Debug("forwarder could not reach its target", "forwarder", f.name, "target", f.target, "error", err)
		return
	}
	if !f.track(upstream) {
		_ = upstream.Close()
		return
	}
	defer f.untrack(upstream)
	done := make(chan struct{}, 2)
	pipe := func(to, from net.Conn) {
		_, _ = io.Copy(to, from)
		// Pass the end of one direction on, and let the other finish (HTTP/1.1 and TLS close_notify need it).
		if half, ok := to.(interface{ CloseWrite() error }); ok {
			_ = half.CloseWrite()
		} else {
			_ = to.Close()
		}
		done <- struct{}{}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
	<-done
	<-done
}

// Close stops listening, ends every relayed connection and waits for the relays to finish.
func (f *Forwarder) Close() error {
	f.mu.Lock()
	f.closed = true
	for conn := range f.conns {
		_ = conn.Close()
	}
	f.mu.Unlock()
	err := f.listener.Close()
	f.wg.Wait()
	return err
}
