package boltstore

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// liveHeap returns the bytes of heap in use after a collection.
func liveHeap() uint64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fuzzedPods returns n fuzzed Pods, and their protobuf encodings.
func fuzzedPods(t *testing.T, n int) ([]*v1.Pod, [][]byte) {
	t.Helper()
	f := testutil.TypeFuzzer(11, 3)
	pods := make([]*v1.Pod, n)
	pbs := make([][]byte, n)
	for i := range pods {
		p := &v1.Pod{}
		f.Fill(p)
		p.Namespace, p.Name, p.ResourceVersion = "ns", fmt.Sprintf("p%04d", i), fmt.Sprint(i+1)
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		pods[i], pbs[i] = p, b
	}
	return pods, pbs
}

// TestHeapSizeMatchesTheHeap decodes objects of several shapes, keeps
// them, and compares what heapSize says they hold with what the Go heap
// grew by.
func TestHeapSizeMatchesTheHeap(t *testing.T) {
	pods, podPBs := fuzzedPods(t, 300)
	var podJSON [][]byte
	for _, p := range pods {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		podJSON = append(podJSON, b)
	}
	encode := func(n int, obj func(i int) interface{ Marshal() ([]byte, error) }) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			b, err := obj(i).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			out[i] = b
		}
		return out
	}
	decodePod := func(b []byte) (interface{}, error) { p := &v1.Pod{}; return p, p.Unmarshal(b) }
	// A store's read: the strings share one copy of the payload.
	podCodec, err := newObjectCodec(&v1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	sharedPod := func(b []byte) (interface{}, error) {
		p, err := podCodec.unmarshalProto(b)
		return p.Interface(), err
	}
	for _, tc := range []struct {
		name     string
		payloads [][]byte
		decode   func([]byte) (interface{}, error)
	}{
		{"fuzzed pods", podPBs, decodePod},
		{"fuzzed pods, strings shared", podPBs, sharedPod},
		{"pods of a name, strings shared", encode(2000, func(i int) interface{ Marshal() ([]byte, error) } {
			return testutil.Pod("ns", fmt.Sprint("p", i), "1")
		}), sharedPod},
		{"pods of a name", encode(2000, func(i int) interface{ Marshal() ([]byte, error) } {
			return testutil.Pod("ns", fmt.Sprint("p", i), "1")
		}), decodePod},
		{"configmaps of 16 KB", encode(300, func(i int) interface{ Marshal() ([]byte, error) } {
			return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("c", i)},
				Data: map[string]string{"a": strings.Repeat("x", 16<<10), "b": "y"}}
		}), func(b []byte) (interface{}, error) { c := &v1.ConfigMap{}; return c, c.Unmarshal(b) }},
		{"unstructured pods", podJSON, func(b []byte) (interface{}, error) {
			var m map[string]interface{}
			err := utiljson.Unmarshal(b, &m)
			return &unstructured.Unstructured{Object: m}, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := make([]interface{}, len(tc.payloads))
			before := liveHeap()
			for i, b := range tc.payloads {
				obj, err := tc.decode(b)
				if err != nil {
					t.Fatal(err)
				}
				objs[i] = obj
			}
			held := float64(liveHeap()) - float64(before)
			var est int64
			for _, obj := range objs {
				est += heapSize(obj)
			}
			goruntime.KeepAlive(objs)
			goruntime.KeepAlive(tc.payloads)
			ratio := float64(est) / held
			t.Logf("%d objects: heap grew %.0f KB, heapSize says %d KB (%.2fx)", len(objs), held/1024, est>>10, ratio)
			if ratio < 0.9 || ratio > 1.25 {
				t.Fatalf("heapSize says %.2fx of what %d objects hold", ratio, len(objs))
			}
		})
	}
}

// TestHotCacheHeapWithinItsBytes fills a store's hot cache by reading
// fuzzed Pods and checks that what it holds on the heap is about its
// bound: not more (the estimate of a decoded object was half of it once),
// nor much less (an estimate far too high wastes the cache).
func TestHotCacheHeapWithinItsBytes(t *testing.T) {
	const limit = 2 << 20
	s, err := Open(filepath.Join(t.TempDir(), "cache.db"), "pods", cachefile.Options{NoSync: true},
		StoreOptions{Object: &v1.Pod{}, HotCacheBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pods, _ := fuzzedPods(t, 600)
	keys := make([]string, len(pods))
	for i, p := range pods {
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
		keys[i] = p.Namespace + "/" + p.Name
	}
	pods = nil
	evictAll := func() {
		s.hot.beginWrite(nil)
		s.hot.endWrite(nil, false, 0, nil)
	}
	evictAll()
	for _, k := range keys {
		if _, ok, err := s.GetByKey(k); !ok || err != nil {
			t.Fatalf("GetByKey(%s): %v, %v", k, ok, err)
		}
	}
	full := liveHeap()
	entries := len(s.hot.entries)
	evictAll()
	held := float64(full) - float64(liveHeap())
	t.Logf("%d entries hold %.0f KB of the heap, bound %d KB", entries, held/1024, limit>>10)
	if held > 1.15*limit || held < 0.6*limit {
		t.Fatalf("the hot cache holds %.0f KB of the heap in %d entries; its bound is %d KB", held/1024, entries, limit>>10)
	}
}
