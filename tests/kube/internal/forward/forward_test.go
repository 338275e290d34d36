package forward

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"
)

func TestAConnectionIsRelayedBothWaysAndEndsWithClose(t *testing.T) {
	upstream, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer upstream.Close()
	go func() {
		conn, err := upstream.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		data, _ := io.ReadAll(conn)
		_, _ = conn.Write(append([]byte("echo:"), data...))
	}()
	var dialer net.Dialer
	f, err := Listen("test", 0, upstream.Addr().String(), dialer.DialContext, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.Port())))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Write([]byte("hello"))
	_ = conn.(*net.TCPConn).CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, err := io.ReadAll(conn)
	if err != nil || string(answer) != "echo:hello" {
		t.Fatalf("answer %q, error %v; want echo:hello", answer, err)
	}
	_ = conn.Close()

	// A connection still open when the forwarder closes is ended.
	held, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.Port())))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	closed := make(chan error, 1)
	go func() { closed <- f.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while a connection was open")
	}
	_ = held.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := held.Read(make([]byte, 1)); err == nil {
		t.Fatal("a relayed connection outlived the forwarder")
	}
}
