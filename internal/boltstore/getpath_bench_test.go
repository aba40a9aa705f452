package boltstore

import (
	"testing"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// BenchmarkGetSteps splits a Get into its steps, each run including the
// ones before it: finding the record (a read transaction and the walk to
// the store's objects), checking it (envelope and CRC-32C), decompressing
// its payload, and decoding it (GetByKey itself). DeepCopy is what
// controller-runtime's Get does instead, from an object its map holds: the
// decode's allocations are the copy's, so a Get's cost over a deep copy is
// the three steps before the decode.
func BenchmarkGetSteps(b *testing.B) {
	s, keys, pbs := readBenchStore(b)
	held := make([]*v1.Pod, len(pbs))
	for i, pb := range pbs {
		held[i] = &v1.Pod{}
		if err := held[i].Unmarshal(pb); err != nil {
			b.Fatal(err)
		}
	}
	step := func(name string, fn func(objects *bolt.Bucket, key []byte) error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := []byte(keys[i%len(keys)])
				err := s.db.View(func(tx *bolt.Tx) error {
					objects, err := cachefile.ObjectsTx(tx, s.name)
					if err != nil {
						return err
					}
					return fn(objects, key)
				})
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	check := func(objects *bolt.Bucket, key []byte, v *cachefile.RecordView) error {
		return cachefile.ParseRecord(key, objects.Get(key), v)
	}
	step("find", func(objects *bolt.Bucket, key []byte) error {
		if objects.Get(key) == nil {
			b.Fatalf("no record for %s", key)
		}
		return nil
	})
	step("check", func(objects *bolt.Bucket, key []byte) error {
		var v cachefile.RecordView
		return check(objects, key, &v)
	})
	step("decompress", func(objects *bolt.Bucket, key []byte) error {
		var v cachefile.RecordView
		if err := check(objects, key, &v); err != nil {
			return err
		}
		_, err := cachefile.DecompressPayload(v.Compression, v.Payload, nil)
		return err
	})
	b.Run("decode", benchGetByKey(s, keys))
	b.Run("deepcopy", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = held[i%len(held)].DeepCopyObject()
			i++
		}
	})
}
