package cluster

import "testing"

func TestControllerEnabledReadsTheListAsTheControllerManagerDoes(t *testing.T) {
	cases := []struct {
		controllers []string
		want        bool
	}{
		{DefaultControllers, true},
		{[]string{"namespace-controller"}, false},
		{[]string{"*"}, true},
		{[]string{"*", "-serviceaccount-controller"}, false},
		{[]string{"serviceaccount-controller", "-serviceaccount-controller"}, false},
	}
	for _, c := range cases {
		if got := controllerEnabled(c.controllers, "serviceaccount-controller"); got != c.want {
			t.Errorf("controllerEnabled(%v) = %v, want %v", c.controllers, got, c.want)
		}
	}
}

func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := freePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, port := range ports {
		if port <= 0 || seen[port] {
			t.Fatalf("ports %v are not distinct positive numbers", ports)
		}
		seen[port] = true
	}
}

func TestASecondLockOnTheSameDirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	first, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if second, err := LockDir(dir); err == nil {
		_ = second.Close()
		t.Fatal("a second lock was granted while the first is held")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := LockDir(dir)
	if err != nil {
		t.Fatalf("the lock was not released: %v", err)
	}
	_ = again.Close()
}
