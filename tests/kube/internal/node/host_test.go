package node

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestEverythingMountedBelowADirectoryIsUnmountedAndTheDirectoryStays(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	dir := t.TempDir()
	outer := filepath.Join(dir, "a")
	inner := filepath.Join(outer, "b")
	if err := os.MkdirAll(outer, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", outer, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(outer, unix.MNT_DETACH)
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", inner, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	// A mount stacked on another.
	if err := unix.Mount("tmpfs", inner, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := UnmountBelow(dir); err != nil {
		t.Fatal(err)
	}
	if points, err := mountPointsBelow(dir); err != nil || len(points) > 0 {
		t.Fatalf("still mounted below %s: %v (%v)", dir, points, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the directory itself is gone: %v", err)
	}
}
