package bench

import (
	"fmt"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Indexer benchmarks: the same 10k Pods in 100 namespaces in client-go's
// indexer and in a Store (fsync on, as in production), with and without the
// hot-object cache. Sub-benchmark names pair up: .../client-go vs .../bolt.

const indexerN = 10000

func indexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}

type indexerCase struct {
	name string
	make func(b *testing.B) cache.Indexer
}

func indexerCases() []indexerCase {
	return []indexerCase{
		{"client-go", func(b *testing.B) cache.Indexer { return cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers()) }},
		{"bolt", func(b *testing.B) cache.Indexer { return openStore(b, 0) }},
		{"bolt-hot", func(b *testing.B) cache.Indexer { return openStore(b, 1<<30) }},
	}
}

func openStore(b *testing.B, hot int64) *boltstore.Store {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), "pods", cachefile.Options{},
		boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: indexers(), HotCacheBytes: hot})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func fill(b *testing.B, idx cache.Indexer, n int) []string {
	list := make([]interface{}, n)
	keys := make([]string, n)
	for i := range list {
		p := Pod(i, 100, int64(i+1))
		list[i], keys[i] = p, p.Namespace+"/"+p.Name
	}
	if err := idx.Replace(list, fmt.Sprint(n)); err != nil {
		b.Fatal(err)
	}
	return keys
}

func BenchmarkIndexerGet(b *testing.B) {
	for _, c := range indexerCases() {
		b.Run(c.name, func(b *testing.B) {
			idx := c.make(b)
			keys := fill(b, idx, indexerN)
			b.ResetTimer()
			i := 0
			for b.Loop() {
				// Hot keys: 100 distinct, as a controller re-reading its objects.
				if _, ok, err := idx.GetByKey(keys[i%100]); !ok || err != nil {
					b.Fatal(ok, err)
				}
				i++
			}
		})
	}
	// controller-runtime's cached reader deep-copies what it returns.
	b.Run("client-go+deepcopy", func(b *testing.B) {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers())
		keys := fill(b, idx, indexerN)
		b.ResetTimer()
		i := 0
		for b.Loop() {
			obj, _, _ := idx.GetByKey(keys[i%100])
			_ = obj.(*v1.Pod).DeepCopy()
			i++
		}
	})
}

func BenchmarkIndexerGetCold(b *testing.B) {
	for _, c := range indexerCases()[:2] {
		b.Run(c.name, func(b *testing.B) {
			idx := c.make(b)
			keys := fill(b, idx, indexerN)
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if _, ok, err := idx.GetByKey(keys[(i*7919)%len(keys)]); !ok || err != nil {
					b.Fatal(ok, err)
				}
				i++
			}
		})
	}
}

func BenchmarkIndexerList10k(b *testing.B) {
	for _, c := range indexerCases()[:2] {
		b.Run(c.name, func(b *testing.B) {
			idx := c.make(b)
			fill(b, idx, indexerN)
			b.ResetTimer()
			for b.Loop() {
				if n := len(idx.List()); n != indexerN {
					b.Fatal(n)
				}
			}
		})
	}
}

func BenchmarkIndexerByIndex100(b *testing.B) {
	for _, c := range indexerCases() {
		b.Run(c.name, func(b *testing.B) {
			idx := c.make(b)
			fill(b, idx, indexerN)
			b.ResetTimer()
			for b.Loop() {
				objs, err := idx.ByIndex(cache.NamespaceIndex, "team-042")
				if err != nil || len(objs) != indexerN/100 {
					b.Fatal(len(objs), err)
				}
			}
		})
	}
}

// BenchmarkIndexerBatchCommit1k applies 1000 updates as one batch: Apply
// (one transaction, fsync on) vs client-go's indexer taking 1000 Updates.
func BenchmarkIndexerBatchCommit1k(b *testing.B) {
	b.Run("client-go", func(b *testing.B) {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers())
		fill(b, idx, indexerN)
		rv := int64(indexerN)
		b.ResetTimer()
		for b.Loop() {
			for i := 0; i < 1000; i++ {
				rv++
				if err := idx.Update(Pod(i*10, 100, rv)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("bolt", func(b *testing.B) {
		s := openStore(b, 0)
		fill(b, s, indexerN)
		rv := int64(indexerN)
		b.ResetTimer()
		for b.Loop() {
			ops := make([]boltstore.Op, 1000)
			for i := range ops {
				rv++
				ops[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: Pod(i*10, 100, rv)}
			}
			if _, err := s.Apply(ops, fmt.Sprint(rv)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
