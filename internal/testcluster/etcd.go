package testcluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// startEtcdLocked starts a one-member etcd with its client and peer URLs on
// the given loopback ports and waits for /health. The caller holds
// lifecycleMu.
func (c *Cluster) startEtcdLocked(ctx context.Context, clientPort, peerPort int) error {
	clientURL := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))
	peerURL := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))
	// etcd starts once per cluster, always as a new member: a data
	// directory left by an attempt on other ports would keep their URLs.
	dataDir := filepath.Join(c.dir, "etcd-data")
	if err := os.RemoveAll(dataDir); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	args := []string{
		"--name=testcluster",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=testcluster=" + peerURL,
		// The data is thrown away with the test; fsync would only slow
		// every write down.
		"--unsafe-no-fsync=true",
	}
	args = append(args, c.etcdFlags...)
	p, err := startProcess(Etcd, c.etcdBin, args, c.LogPath(Etcd))
	if err != nil {
		return err
	}
	c.etcdURL = clientURL
	if err := c.waitReady(ctx, p, c.etcdHealthy); err != nil {
		p.stop()
		return err
	}
	c.mu.Lock()
	c.etcd = p
	c.mu.Unlock()
	return nil
}

// etcdHealthy asks etcd's /health endpoint, which answers ok once the member
// has a leader and serves requests.
func (c *Cluster) etcdHealthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.etcdURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := c.etcdHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return fmt.Errorf("etcd /health: %s: %w", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || h.Health != "true" {
		return fmt.Errorf("etcd /health: %s: health=%q reason=%q", resp.Status, h.Health, h.Reason)
	}
	return nil
}

// EtcdRevision returns etcd's current revision, which is the
// resourceVersion of the latest write to the apiserver.
func (c *Cluster) EtcdRevision(ctx context.Context) (int64, error) {
	// A count-only range over one key costs nothing and its header carries
	// the store's revision.
	var resp struct {
		Header struct {
			Revision json.Number `json:"revision"`
		} `json:"header"`
	}
	req := map[string]any{"key": base64.StdEncoding.EncodeToString([]byte("/")), "count_only": true}
	if err := c.etcdCall(ctx, "/v3/kv/range", req, &resp); err != nil {
		return 0, fmt.Errorf("testcluster: read etcd revision: %w", err)
	}
	rev, err := resp.Header.Revision.Int64()
	if err != nil {
		return 0, fmt.Errorf("testcluster: read etcd revision: %q: %w", resp.Header.Revision, err)
	}
	return rev, nil
}

// CompactEtcd compacts etcd's history up to its current revision and waits
// until the compaction is applied, so that reading or watching etcd at an
// older revision fails. It returns that revision. The apiserver's watch
// cache is not affected: it keeps serving watches from the history it holds
// (RestartAPIServer empties it).
func (c *Cluster) CompactEtcd(ctx context.Context) (int64, error) {
	rev, err := c.EtcdRevision(ctx)
	if err != nil {
		return 0, err
	}
	req := map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}
	if err := c.etcdCall(ctx, "/v3/kv/compaction", req, nil); err != nil {
		// The apiserver compacts etcd on its own every few minutes; a
		// history already compacted up to rev is what the caller wants.
		if strings.Contains(err.Error(), "required revision has been compacted") {
			return rev, nil
		}
		return 0, fmt.Errorf("testcluster: compact etcd at revision %d: %w", rev, err)
	}
	return rev, nil
}

// etcdCall posts a JSON request to etcd's gRPC gateway and decodes the
// answer into out, if not nil.
func (c *Cluster) etcdCall(ctx context.Context, path string, in, out any) error {
	c.mu.Lock()
	stopped := c.stopped || c.etcd == nil
	c.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.etcdHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("POST %s: decode %q: %w", path, b, err)
	}
	return nil
}
