package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// probeInterval is how often a readiness condition is checked while waiting for it.
const probeInterval = 100 * time.Millisecond

// waitFor checks condition until it holds, the process exits, ctx ends or timeout passes; the error names the last
// reason the condition gave and the component's log.
func waitFor(ctx context.Context, p *process, what string, timeout time.Duration, condition func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(probeInterval)
	defer ticker.Stop()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 5*time.Second)
		last := condition(attempt)
		cancelAttempt()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("waiting for %s: %w (log: %s)", what, p.exitError(), p.logPath)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s not reached within %s: %w (log: %s)", what, timeout, last, p.logPath)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-ticker.C:
		}
	}
}

// httpsClient trusts the harness CA and, when given, presents a client certificate.
func httpsClient(caPEM []byte, client *tls.Certificate) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the CA file holds no certificate")
	}
	config := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if client != nil {
		config.Certificates = []tls.Certificate{*client}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: config}}, nil
}

// getOK requests url and returns the body when the status is 200.
func getOK(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	response, err := client.Do(request)
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(io.LimitReader(response.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if response.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, response.Status, truncate(body, 400))
	}
	return body, nil
}

// etcdHealthy asks etcd's /health endpoint, which answers {"health":"true"} once the member serves.
func etcdHealthy(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		body, err := getOK(ctx, client, url+"/health")
		if err != nil {
			return err
		}
		var health struct {
			Health string `json:"health"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(body, &health); err != nil {
			return fmt.Errorf("decoding etcd health: %w", err)
		}
		if health.Health != "true" {
			return fmt.Errorf("etcd is not healthy: %s", health.Reason)
		}
		return nil
	}
}

// allOK holds when every path answers 200.
func allOK(client *http.Client, base string, paths ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, path := range paths {
			if _, err := getOK(ctx, client, base+path); err != nil {
				return err
			}
		}
		return nil
	}
}

// freePorts asks the kernel for n distinct free loopback ports, none of them equal to avoid (0 avoids nothing), all
// held open until every one is known. Another process can take one before the component binds it; the component
// then fails to start and its exit error wraps errPortTaken.
func freePorts(n, avoid int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		defer listener.Close()
		number := listener.Addr().(*net.TCPAddr).Port
		if number != avoid {
			ports = append(ports, number)
		}
	}
	return ports, nil
}

func truncate(body []byte, limit int) string {
	if len(body) > limit {
		return string(body[:limit]) + "…"
	}
	return string(body)
}
