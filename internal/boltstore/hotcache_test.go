package boltstore_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestHotCacheServesAndInvalidates(t *testing.T) {
	opts := podOpts()
	opts.HotCacheBytes = 1 << 20
	s := boltstoretest.Open(t, "pods", opts)
	if err := s.Add(testutil.Pod("a", "p", "1", testutil.Label("app", "p"), testutil.Node("n1"))); err != nil {
		t.Fatal(err)
	}
	a, _, _ := s.GetByKey("a/p")
	b, _, _ := s.GetByKey("a/p")
	if a != b {
		t.Fatal("hot cache did not serve the second Get")
	}
	if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p", "2", testutil.Label("app", "p"), testutil.Node("n2"))}}, "2"); err != nil {
		t.Fatal(err)
	}
	c, _, _ := s.GetByKey("a/p")
	if c.(*v1.Pod).ResourceVersion != "2" {
		t.Fatalf("hot cache served a stale object after a write: rv %s", c.(*v1.Pod).ResourceVersion)
	}
	if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpDelete, Obj: testutil.Pod("a", "p", "3", testutil.Label("app", "p"), testutil.Node(""))}}, "3"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.GetByKey("a/p"); ok {
		t.Fatal("hot cache served a deleted object")
	}
	if err := s.Replace(nil, "4"); err != nil {
		t.Fatal(err)
	}
}

// TestHotCacheNeverOlderThanStore races readers against a writer: once a
// write has returned, no Get may return an older object.
func TestHotCacheNeverOlderThanStore(t *testing.T) {
	opts := podOpts()
	opts.HotCacheBytes = 1 << 20
	s := boltstoretest.Open(t, "pods", opts)
	if err := s.Add(testutil.Pod("a", "p", "1", testutil.Label("app", "p"), testutil.Node("n"))); err != nil {
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
		if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: testutil.Pod("a", "p", strconv.FormatInt(rv, 10), testutil.Label("app", "p"), testutil.Node("n"))}}, strconv.FormatInt(rv, 10)); err != nil {
			t.Fatal(err)
		}
		committed.Store(rv)
	}
	close(stop)
	wg.Wait()
}

// TestHotCacheReadsItsOwnTransaction: a ByIndex whose read transaction
// predates a commit must not get the committed (newer) object from the hot
// cache for an index entry of its older snapshot. Writers move every pod to
// a new "gen" label, by watch updates and by relists, while readers check
// that every object ByIndex("gen", v) returns has gen v.
func TestHotCacheReadsItsOwnTransaction(t *testing.T) {
	opts := podOpts()
	opts.HotCacheBytes = 8 << 20
	opts.Indexers["gen"] = func(obj interface{}) ([]string, error) {
		return []string{obj.(*v1.Pod).Labels["gen"]}, nil
	}
	s := boltstoretest.Open(t, "pods", opts)
	const pods = 64
	genPod := func(i, gen, rv int) *v1.Pod {
		p := testutil.Pod("a", fmt.Sprint("p", i), strconv.Itoa(rv), testutil.Label("app", fmt.Sprint("p", i)), testutil.Node("n"))
		p.Labels = map[string]string{"gen": strconv.Itoa(gen)}
		return p
	}
	rv := 1
	var ops []boltstore.Op
	for i := 0; i < pods; i++ {
		ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: genPod(i, 0, rv)})
	}
	if _, err := s.Apply(ops, strconv.Itoa(rv)); err != nil {
		t.Fatal(err)
	}
	var gen atomic.Int64
	var torn atomic.Int64
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
				g := gen.Load()
				for _, v := range []int64{g, g - 1} {
					objs, err := s.ByIndex("gen", strconv.FormatInt(v, 10))
					if err != nil {
						t.Errorf("ByIndex: %v", err)
						return
					}
					for _, o := range objs {
						if got := o.(*v1.Pod).Labels["gen"]; got != strconv.FormatInt(v, 10) {
							torn.Add(1)
						}
					}
				}
			}
		})
	}
	for g := 1; g <= 150; g++ {
		rv++
		if g%5 == 0 {
			if err := s.BeginRelist("test"); err != nil {
				t.Fatal(err)
			}
			var page []boltstore.Op
			for i := 0; i < pods; i++ {
				page = append(page, boltstore.Op{Type: boltstore.OpUpsert, Obj: genPod(i, g, rv)})
			}
			if _, err := s.ApplyListPage(page); err != nil {
				t.Fatal(err)
			}
			if _, err := s.FinishRelist(strconv.Itoa(rv)); err != nil {
				t.Fatal(err)
			}
		} else {
			for i := 0; i < pods; i += 8 {
				var ops []boltstore.Op
				for j := i; j < i+8; j++ {
					ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: genPod(j, g, rv)})
				}
				if _, err := s.Apply(ops, strconv.Itoa(rv)); err != nil {
					t.Fatal(err)
				}
			}
		}
		gen.Store(int64(g))
	}
	close(stop)
	wg.Wait()
	if n := torn.Load(); n > 0 {
		t.Fatalf("ByIndex returned %d objects whose indexed value is not the one asked for (torn reads through the hot cache)", n)
	}
}
