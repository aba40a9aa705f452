package boltindexer_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	icachefile "github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestListReportsToOptionsLogger: List, which has no error to return,
// reports a damaged record to Options.Logger, not to the process's klog,
// and returns the objects that decode.
func TestListReportsToOptionsLogger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	w, err := boltstore.Open(path, "pods", icachefile.Options{NoSync: true, Logger: testutil.Logger(t)}, boltstore.StoreOptions{Object: &v1.Pod{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*v1.Pod{testutil.Pod("default", "a", "1"), testutil.Pod("default", "b", "2")} {
		if err := w.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		objects := tx.Bucket(icachefile.StoresBucket).Bucket([]byte("pods")).Bucket(icachefile.ObjectsBucket)
		rec := append([]byte(nil), objects.Get([]byte("default/b"))...)
		rec[len(rec)/2] ^= 0x01
		return objects.Put([]byte("default/b"), rec)
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{})
	r, err := readOnly(t, path, "pods", boltindexer.Options{Object: &v1.Pod{}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.List()); got != 1 {
		t.Fatalf("List returned %d objects, want the 1 that decodes", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, "default/b") && strings.Contains(l, "checksum") {
			return
		}
	}
	t.Fatalf("Options.Logger has no line naming the damaged record default/b; it has:\n%s", strings.Join(lines, "\n"))
}
