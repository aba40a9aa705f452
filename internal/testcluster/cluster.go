package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// DefaultStartTimeout bounds how long each server may take to become ready
// when Options.StartTimeout is zero. kube-apiserver usually needs 5-15 s on
// two busy cores.
const DefaultStartTimeout = 90 * time.Second

// Options configure Start. The zero value is ready to use.
type Options struct {
	// BinDir holds the etcd and kube-apiserver binaries. Default:
	// $BOLTINFORMER_BIN, else bin/ at the root of this repository.
	BinDir string

	// Dir receives etcd's data, the keys, the certificates and the logs.
	// Default: a new temporary directory that Stop removes. A given Dir is
	// left in place.
	Dir string

	// StartTimeout bounds how long each server may take to become ready, on
	// Start and on every StartAPIServer. Default: DefaultStartTimeout.
	StartTimeout time.Duration

	// EtcdFlags and APIServerFlags are appended to the flags the package
	// sets; a flag given twice takes its last value.
	EtcdFlags      []string
	APIServerFlags []string
}

// Cluster is a running etcd and kube-apiserver pair on 127.0.0.1. Its
// methods are safe for concurrent use; Stop must be called to release the
// processes (StartT does it in a cleanup).
type Cluster struct {
	dir       string
	removeDir bool // dir was made by Start, so Stop removes it
	timeout   time.Duration
	token     string

	etcdBin, apiBin     string
	etcdFlags, apiFlags []string

	etcdURL string // http://127.0.0.1:port
	apiPort int

	etcdHTTP *http.Client

	// lifecycleMu serializes starting and stopping the servers; it is taken
	// before mu and held across a whole restart.
	lifecycleMu sync.Mutex

	// mu guards the fields below. It is never held while waiting on a
	// server or the network.
	mu        sync.Mutex
	etcd      *process
	apiserver *process
	caData    []byte       // PEM of the apiserver's serving certificate and its CA
	apiHTTP   *http.Client // trusts caData; nil until the apiserver first answered
	stopped   bool
}

// Start runs etcd and then kube-apiserver on free loopback ports and returns
// once the apiserver's /readyz answers ok. ctx bounds only the start; the
// servers run until Stop.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// StartT is Start for tests: it fails t if the cluster cannot start, stops
// the cluster in t's cleanup, and logs the tail of both servers' logs there
// if t failed.
func StartT(t testing.TB) *Cluster {
	t.Helper()
	return StartTWithOptions(t, Options{})
}

// StartTWithOptions is StartT with Options. An empty opts.Dir becomes a
// t.TempDir().
func StartTWithOptions(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	c, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []ProcessName{APIServer, Etcd} {
				t.Logf("testcluster: tail of %s:\n%s", c.LogPath(name), logTail(c.LogPath(name)))
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("testcluster: %v", err)
		}
	})
	return c
}

func newCluster(opts Options) (*Cluster, error) {
	binDir := opts.BinDir
	if binDir == "" {
		var err error
		if binDir, err = findBinDir(); err != nil {
			return nil, err
		}
	}
	etcdBin, err := binary(binDir, "etcd")
	if err != nil {
		return nil, err
	}
	apiBin, err := binary(binDir, "kube-apiserver")
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		dir:       opts.Dir,
		timeout:   opts.StartTimeout,
		etcdBin:   etcdBin,
		apiBin:    apiBin,
		etcdFlags: opts.EtcdFlags,
		apiFlags:  opts.APIServerFlags,
		etcdHTTP:  &http.Client{Transport: &http.Transport{Proxy: nil}},
	}
	if c.timeout <= 0 {
		c.timeout = DefaultStartTimeout
	}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "testcluster-"); err != nil {
			return nil, fmt.Errorf("testcluster: %w", err)
		}
		c.removeDir = true
	}
	if c.token, err = writeAuthFiles(c.dir); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// bindAttempts is how often start picks new ports when another process took
// one between picking and binding it.
const bindAttempts = 3

func (c *Cluster) start(ctx context.Context) error {
	c.lifecycleMu.Lock()
	defer c.lifecycleMu.Unlock()

	var err error
	for range bindAttempts {
		var ports []int
		if ports, err = freePorts(2); err != nil {
			return err
		}
		if err = c.startEtcdLocked(ctx, ports[0], ports[1]); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		return err
	}
	for range bindAttempts {
		var ports []int
		if ports, err = freePorts(1); err != nil {
			return err
		}
		c.mu.Lock()
		c.apiPort = ports[0]
		c.mu.Unlock()
		if err = c.startAPIServerLocked(ctx); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	return err
}

// Stop stops kube-apiserver and then etcd, waiting until both process groups
// are gone, and removes the directory Start made. It is idempotent.
func (c *Cluster) Stop() error {
	c.lifecycleMu.Lock()
	defer c.lifecycleMu.Unlock()
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	api, etcd := c.apiserver, c.etcd
	c.apiserver, c.etcd = nil, nil
	apiHTTP := c.apiHTTP
	c.mu.Unlock()

	if api != nil {
		api.stop()
	}
	if etcd != nil {
		etcd.stop()
	}
	if apiHTTP != nil {
		apiHTTP.CloseIdleConnections()
	}
	c.etcdHTTP.CloseIdleConnections()
	if c.removeDir {
		if err := os.RemoveAll(c.dir); err != nil {
			return fmt.Errorf("testcluster: remove %s: %w", c.dir, err)
		}
	}
	return nil
}

// Config returns a new client config for the apiserver: the admin token
// (group system:masters), TLS verified against the apiserver's self-signed
// CA, and no client-side rate limit.
func (c *Cluster) Config() *rest.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &rest.Config{
		Host:            c.hostLocked(),
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.caData...)},
		QPS:             -1,
	}
}

// Host returns the apiserver's URL, https://127.0.0.1:port. The port stays
// the same across RestartAPIServer.
func (c *Cluster) Host() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hostLocked()
}

func (c *Cluster) hostLocked() string {
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.apiPort))
}

// EtcdURL returns etcd's client URL, http://127.0.0.1:port.
func (c *Cluster) EtcdURL() string { return c.etcdURL }

// Dir returns the directory holding the servers' data, keys and logs.
func (c *Cluster) Dir() string { return c.dir }

// LogPath returns the file that receives the named server's stdout and
// stderr; restarts append to it.
func (c *Cluster) LogPath(name ProcessName) string {
	return filepath.Join(c.dir, string(name)+".log")
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// Another process may take one before the server binds it; start retries
// then.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testcluster: pick a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// errAddrInUse marks a start that failed because a port was taken.
var errAddrInUse = errors.New("address already in use")

// waitReady polls probe until it succeeds, the process exits, ctx ends or
// the start timeout passes. Its errors wrap ErrNotReady and carry the tail
// of the process's log.
func (c *Cluster) waitReady(ctx context.Context, p *process, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		last = probe(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.exited:
			tail := logTail(p.logPath)
			err := fmt.Errorf("%w: %s %v; tail of %s:\n%s", ErrNotReady, p.name, p.exitError(), p.logPath, tail)
			if strings.Contains(tail, errAddrInUse.Error()) {
				err = fmt.Errorf("%w (%w)", err, errAddrInUse)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("%w: %s after %v: %w (last probe: %v); tail of %s:\n%s",
				ErrNotReady, p.name, c.timeout, ctx.Err(), last, p.logPath, logTail(p.logPath))
		case <-tick.C:
		}
	}
}
