package boltstore

import (
	"fmt"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// readBenchPods is how many Pods the read benchmarks store, readBenchNS
// how many namespaces they spread over.
const (
	readBenchPods = 2000
	readBenchNS   = 20
)

// readBenchStore fills a store with readBenchPods Pods and returns it with
// every Pod's protobuf message, the floor a decoding read cannot beat.
func readBenchStore(b *testing.B) (*Store, []string, [][]byte) {
	s, err := Open(filepath.Join(b.TempDir(), "cache.db"), "pods", cachefile.Options{NoSync: true}, StoreOptions{
		Object:   &v1.Pod{},
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	var keys []string
	var pbs [][]byte
	var objs []interface{}
	for i := range readBenchPods {
		p := readBenchPod(i)
		pb, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		keys = append(keys, p.Namespace+"/"+p.Name)
		pbs = append(pbs, pb)
		objs = append(objs, p)
	}
	if err := s.Replace(objs, "1"); err != nil {
		b.Fatal(err)
	}
	return s, keys, pbs
}

func readBenchPod(i int) *v1.Pod {
	p := benchPod()
	p.Namespace = fmt.Sprintf("ns-%02d", i%readBenchNS)
	p.Name = fmt.Sprintf("pod-%05d", i)
	p.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
	p.ResourceVersion = fmt.Sprint(i + 1)
	return p
}

// benchGetByKey reads keys in turn with GetByKey.
func benchGetByKey(s *Store, keys []string) func(b *testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, ok, err := s.GetByKey(keys[i%len(keys)]); !ok || err != nil {
				b.Fatal(ok, err)
			}
			i++
		}
	}
}

func decodeAll(b *testing.B, pbs [][]byte) {
	out := make([]interface{}, 0, len(pbs))
	for _, pb := range pbs {
		p := &v1.Pod{}
		if err := p.Unmarshal(pb); err != nil {
			b.Fatal(err)
		}
		out = append(out, p)
	}
}

// BenchmarkReadPath compares each read with a plain protobuf decode of
// what it returns (…/decode), so the difference is the read path's own cost.
func BenchmarkReadPath(b *testing.B) {
	s, keys, pbs := readBenchStore(b)
	b.Run("Get/store", benchGetByKey(s, keys))
	b.Run("Get/decode", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			p := &v1.Pod{}
			if err := p.Unmarshal(pbs[i%len(pbs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("List/store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if n := len(s.List()); n != len(keys) {
				b.Fatal(n)
			}
		}
	})
	b.Run("List/decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeAll(b, pbs)
		}
	})
	var nsPBs [][]byte
	for i, pb := range pbs {
		if i%readBenchNS == 3 {
			nsPBs = append(nsPBs, pb)
		}
	}
	b.Run("ByIndex/store", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			objs, err := s.ByIndex(cache.NamespaceIndex, "ns-03")
			if err != nil || len(objs) != len(nsPBs) {
				b.Fatal(len(objs), err)
			}
		}
	})
	b.Run("ByIndex/decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeAll(b, nsPBs)
		}
	})
}

// BenchmarkPayloadCompression is the read cost of compression: decoding
// a Pod record stored plain against the same record stored with S2 (the
// decision rule is that a compressed read costs at most 10% more).
func BenchmarkPayloadCompression(b *testing.B) {
	c, err := newObjectCodec(&v1.Pod{})
	if err != nil {
		b.Fatal(err)
	}
	rec, _, _, err := newRecord(c, "ns/p", readBenchPod(1), nil, new([]byte), new([]byte))
	if err != nil {
		b.Fatal(err)
	}
	if rec.Compression != cachefile.CompressionS2 {
		b.Fatalf("record stored as %s", rec.Compression)
	}
	plain := *rec
	if plain.Payload, err = cachefile.DecompressPayload(rec.Compression, rec.Payload, nil); err != nil {
		b.Fatal(err)
	}
	plain.Compression = cachefile.CompressionNone
	b.Logf("payload %d bytes, %d with S2", len(plain.Payload), len(rec.Payload))
	for _, r := range []struct {
		name string
		rec  *cachefile.Record
	}{{"plain", &plain}, {"s2", rec}} {
		enc, err := cachefile.EncodeRecord([]byte("ns/p"), r.rec)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v cachefile.RecordView
				if err := cachefile.ParseRecord([]byte("ns/p"), enc, &v); err != nil {
					b.Fatal(err)
				}
				if _, _, err := c.decodeView("ns/p", &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
