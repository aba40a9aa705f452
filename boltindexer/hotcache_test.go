package boltindexer_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/boltindexer/boltindexertest"
)

func TestHotCacheServesAndInvalidates(t *testing.T) {
	opts := podOpts()
	opts.HotCacheBytes = 1 << 20
	s := boltindexertest.Open(t, "pods", opts)
	if err := s.Add(pod("a", "p", "1", "n1")); err != nil {
		t.Fatal(err)
	}
	a, _, _ := s.GetByKey("a/p")
	b, _, _ := s.GetByKey("a/p")
	if a != b {
		t.Fatal("hot cache did not serve the second Get")
	}
	if _, err := s.Apply([]boltindexer.Op{{Type: boltindexer.OpUpsert, Obj: pod("a", "p", "2", "n2")}}, "2"); err != nil {
		t.Fatal(err)
	}
	c, _, _ := s.GetByKey("a/p")
	if c.(*v1.Pod).ResourceVersion != "2" {
		t.Fatalf("hot cache served a stale object after a write: rv %s", c.(*v1.Pod).ResourceVersion)
	}
	if _, err := s.Apply([]boltindexer.Op{{Type: boltindexer.OpDelete, Obj: pod("a", "p", "3", "")}}, "3"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.GetByKey("a/p"); ok {
		t.Fatal("hot cache served a deleted object")
	}
	if err := s.Replace(nil, "4"); err != nil {
		t.Fatal(err)
	}
}

func TestHotCacheBoundedBySize(t *testing.T) {
	opts := podOpts()
	opts.HotCacheBytes = 4096 // a few small pods
	s := boltindexertest.Open(t, "pods", opts)
	for i := 0; i < 200; i++ {
		if err := s.Add(pod("a", fmt.Sprint("p", i), strconv.Itoa(i+1), "n")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.GetByKey(fmt.Sprintf("a/p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.HotCacheStats(); st.Bytes > st.Limit || st.Entries == 0 || st.Entries >= 200 {
		t.Fatalf("hot cache not bounded: %+v", st)
	}
}

// TestHotCacheNeverOlderThanStore races readers against a writer: once a
// write has returned, no Get may return an older object.
func TestHotCacheNeverOlderThanStore(t *testing.T) {
	opts := podOpts()
	opts.HotCacheBytes = 1 << 20
	s := boltindexertest.Open(t, "pods", opts)
	if err := s.Add(pod("a", "p", "1", "n")); err != nil {
		t.Fatal(err)
	}
	var committed atomic.Int64
	committed.Store(1)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				floor := committed.Load()
				obj, ok, err := s.GetByKey("a/p")
				if err != nil || !ok {
					t.Errorf("get: %v %v", ok, err)
					return
				}
				if rv, _ := strconv.ParseInt(obj.(*v1.Pod).ResourceVersion, 10, 64); rv < floor {
					t.Errorf("read rv %d after rv %d was committed", rv, floor)
					return
				}
			}
		})
	}
	for rv := int64(2); rv < 400; rv++ {
		if _, err := s.Apply([]boltindexer.Op{{Type: boltindexer.OpUpsert, Obj: pod("a", "p", strconv.FormatInt(rv, 10), "n")}}, strconv.FormatInt(rv, 10)); err != nil {
			t.Fatal(err)
		}
		committed.Store(rv)
	}
	close(stop)
	wg.Wait()
}
