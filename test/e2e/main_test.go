package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/boltinformer/boltinformer/internal/testcluster"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestMain(m *testing.M) {
	// Every test gives its managers and caches its own logger. What
	// controller-runtime logs through its package loggers, which no option
	// reaches, goes to the process's klog rather than nowhere; without a
	// logger set it would also print a warning with a stack trace.
	ctrllog.SetLogger(klog.Background())
	testutil.RunChild(map[string]func() int{"crash": crashChild, "ctrlcache": ctrlcacheChild, "upgrade": upgradeChild})
	code := m.Run()
	if err := stopSharedCluster(code != 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// shared is the cluster the tests share, started by the first test that
// needs it.
var shared struct {
	once   sync.Once
	c      *testcluster.Cluster
	err    error
	failed atomic.Bool // a test that used it failed: show the servers' logs
}

// sharedCluster returns the shared cluster, starting it on first use.
func sharedCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		start := time.Now()
		shared.c, shared.err = testcluster.Start(ctx, testcluster.Options{})
		t.Logf("started etcd and kube-apiserver in %v", time.Since(start).Round(time.Millisecond))
	})
	if shared.err != nil {
		t.Fatalf("start the shared cluster: %v", shared.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			shared.failed.Store(true)
		}
	})
	return shared.c
}

// stopSharedCluster stops the shared cluster if it was started, printing
// the tail of the servers' logs first if a test failed.
func stopSharedCluster(failed bool) error {
	c := shared.c
	if c == nil {
		return nil
	}
	if failed && shared.failed.Load() {
		for _, name := range []testcluster.ProcessName{testcluster.APIServer, testcluster.Etcd} {
			fmt.Fprintf(os.Stderr, "tail of %s:\n%s\n", c.LogPath(name), fileTail(c.LogPath(name), 8<<10))
		}
	}
	return c.Stop()
}

// fileTail returns the last n bytes of a file.
func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
