package admin_test

import (
	"context"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/admin/admintest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

const mappedObjects = 30000

// largeFile writes a file of mappedObjects Pods.
func largeFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "large.db")
	if err := admintest.WriteLarge(path, mappedObjects); err != nil {
		t.Fatal(err)
	}
	return path
}

// wholeMapped reads every record of the Pod store and returns how much of
// the file that maps, then releases it.
func wholeMapped(t *testing.T, l *admin.Local, path string) int64 {
	t.Helper()
	err := l.DB().View(func(tx *bolt.Tx) error {
		return tx.Bucket(cachefile.StoresBucket).Bucket([]byte(admintest.PodStore)).Bucket(cachefile.ObjectsBucket).ForEach(func(_, v []byte) error {
			_ = v[len(v)-1]
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	rss := testutil.MappedRSS(t, path)
	if err := l.DB().ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	if rss < 8<<20 {
		t.Fatalf("reading every record mapped %d bytes; the test needs 8 MiB or more", rss)
	}
	return rss
}

// openLargeMapped opens a large file (closed at the test's end) and returns
// it, its path and how much of it reading every record maps.
func openLargeMapped(t *testing.T) (*admin.Local, string, int64) {
	t.Helper()
	path := largeFile(t)
	l, err := admin.OpenFile(path, cachefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path, wholeMapped(t, l, path)
}

// TestInfoAndGetByNameMapLittle: what cachectl get NAME reads (Info, then
// the object by name, through a store opened by probing its type) maps a
// few pages of the file, not a share of it. The bound is loose (these small
// Pods put the few pages at a tenth of the file, and the kernel's
// fault-around varies): it catches a walk, not a page; scenario 10 of the
// bench measures the pages on a 300k-Pod file.
func TestInfoAndGetByNameMapLittle(t *testing.T) {
	l, path, all := openLargeMapped(t)
	ctx := context.Background()
	info, err := l.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ns := info.Stores[0].Namespaces; len(ns) != 10 {
		t.Fatalf("namespaces %v, want the 10 of the file", ns)
	}
	n := 0
	err = l.List(ctx, admin.Query{Store: admintest.PodStore, Namespace: "ns-5", Name: "pod-12345"}, func(*unstructured.Unstructured) error { n++; return nil })
	if err != nil || n != 1 {
		t.Fatalf("get by name: %d objects, error %v", n, err)
	}
	if got := testutil.MappedRSS(t, path); got > all/4 {
		t.Errorf("info and a get by name mapped %d bytes of the file; reading all of it maps %d", got, all)
	}
}

// TestListReleasesTheFilesPages: a walk of every object, decoded or keys
// only, does not keep the file's pages it read in the reader's RSS.
func TestListReleasesTheFilesPages(t *testing.T) {
	path := largeFile(t)
	const n = mappedObjects
	for _, keysOnly := range []bool{false, true} {
		l, err := admin.OpenFile(path, cachefile.Options{})
		if err != nil {
			t.Fatal(err)
		}
		all := wholeMapped(t, l, path)
		var seen int
		var peak int64
		err = l.List(context.Background(), admin.Query{Store: admintest.PodStore, KeysOnly: keysOnly}, func(*unstructured.Unstructured) error {
			if seen++; seen%500 == 0 {
				peak = max(peak, testutil.MappedRSS(t, path))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if seen != n {
			t.Fatalf("keys only %v: listed %d objects, want %d", keysOnly, seen, n)
		}
		if peak > all/3 {
			t.Errorf("keys only %v: the walk held up to %d bytes of the file in RSS; reading every record maps %d", keysOnly, peak, all)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVerifyReleasesTheFilesPages: what cachectl check runs on a store
// (decode every record, re-derive its key and index values) does not keep
// the file's pages it read in the checker's RSS.
func TestVerifyReleasesTheFilesPages(t *testing.T) {
	l, path, all := openLargeMapped(t)
	st, err := admin.OpenStore(context.Background(), l.DB(), admintest.PodStore, admintest.PodIndexers(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.MappedRSS(t, path); got > all/4 {
		t.Errorf("Verify left %d bytes of the file in RSS; reading every record maps %d", got, all)
	}
}
