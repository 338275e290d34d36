// Command pause is the process of a pod's sandbox container: it holds the pod's namespaces open, reaps the zombies
// that end up with it (it is PID 1 of a pod that shares its process namespace) and exits on SIGINT or SIGTERM.
//
// It stands in for the pause image of a cluster: no image can be pulled from a public registry here, so the node
// runs an image of its own, built from this program (tests/kube/build.sh).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		os.Stdout.WriteString("pause (kube-harness)\n")
		return
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reap waits for every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
