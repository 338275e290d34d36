package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

func TestASocketMadeInsideIsReachableOnlyFromInside(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	random := make([]byte, 4)
	_, _ = rand.Read(random)
	ns, err := Create("kh-test-" + hex.EncodeToString(random))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ns.Close()
		if err := Delete(ns.Name); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(ns.Path); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", ns.Path, err)
		}
	}()
	var listener net.Listener
	if err := ns.Do(func() error { return setLoopbackUp() }); err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error {
		var err error
		listener, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	address := listener.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := ns.DialContext(ctx, "tcp", address)
	if err != nil {
		t.Fatalf("dialing %s from inside: %v", address, err)
	}
	_ = conn.Close()
	if conn, err := net.DialTimeout("tcp", address, time.Second); err == nil {
		_ = conn.Close()
		// The same port may be in use outside by chance; a refused dial is what is expected.
		t.Logf("something outside listens on %s as well", address)
	}
}

// setLoopbackUp brings lo up in the calling thread's namespace (a new namespace's loopback is down).
func setLoopbackUp() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(lo)
}
