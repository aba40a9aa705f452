package boltstore_test

import (
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestColdListFillsItsPages: a cold list, applied page by page in key
// order, fills the objects bucket's leaves past cachefile.ObjectsFillPercent
// (to AppendFillPercent: nothing is inserted between them), and its index
// bucket's leaves about as full as cachefile.IndexFillPercent asks, not at
// bbolt's default of half.
func TestColdListFillsItsPages(t *testing.T) {
	for _, apply := range []struct {
		name string
		page func(s *boltstore.Store, ops []boltstore.Op) ([]boltstore.Change, error)
	}{{"apply", (*boltstore.Store).ApplyListPage}, {"stage", (*boltstore.Store).StageListPage}} {
		t.Run(apply.name, func(t *testing.T) { testColdListFillsItsPages(t, apply.page) })
	}
}

func testColdListFillsItsPages(t *testing.T, applyPage func(s *boltstore.Store, ops []boltstore.Op) ([]boltstore.Change, error)) {
	s := boltstoretest.Open(t, "pods", boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	if err := s.BeginRelist("cold start"); err != nil {
		t.Fatal(err)
	}
	const pages, perPage = 10, 500
	for p := range pages {
		objs := make([]interface{}, perPage)
		for i := range objs {
			n := p*perPage + i
			objs[i] = testutil.Pod(fmt.Sprintf("ns-%d", n/2000), fmt.Sprintf("pod-%06d", n), "5")
		}
		if _, err := applyPage(s, upserts(objs...)); err != nil {
			t.Fatal(err)
		}
	}
	var st, objects bolt.BucketStats
	if err := s.DB().View(func(tx *bolt.Tx) error {
		b, err := cachefile.StoreTx(tx, s.Name())
		if err != nil {
			return err
		}
		st, objects = b.Index(cache.NamespaceIndex).Stats(), b.Objects.Stats()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// bbolt fills a leaf up to the fill it is given, never past it.
	if fill := float64(objects.LeafInuse) / float64(objects.LeafAlloc); fill <= cachefile.ObjectsFillPercent {
		t.Errorf("the objects' %d leaf pages are %.1f%% full, want more than %.0f%%", objects.LeafPageN, 100*fill, 100*cachefile.ObjectsFillPercent)
	}
	if st.KeyN != pages*perPage {
		t.Fatalf("the index holds %d entries, want %d", st.KeyN, pages*perPage)
	}
	fill := float64(st.LeafInuse) / float64(st.LeafAlloc)
	if want := cachefile.IndexFillPercent - 0.15; fill < want {
		t.Fatalf("the index's %d leaf pages are %.0f%% full, want at least %.0f%%", st.LeafPageN, 100*fill, 100*want)
	}
}
