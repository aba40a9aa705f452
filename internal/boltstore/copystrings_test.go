package boltstore

import (
	"path/filepath"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// TestCopyStringsOption: by default a read decodes onto one buffer (a few
// dozen allocations for a Pod of 90 strings); with CopyStrings every
// string is an allocation of its own, as generated Unmarshal makes it, and
// both give the same object.
func TestCopyStringsOption(t *testing.T) {
	pod := readBenchPod(1)
	key := pod.Namespace + "/" + pod.Name
	allocs := map[bool]float64{}
	got := map[bool]interface{}{}
	for _, copyStrings := range []bool{false, true} {
		s, err := Open(filepath.Join(t.TempDir(), "cache.db"), "pods", cachefile.Options{NoSync: true}, StoreOptions{Object: &v1.Pod{}, CopyStrings: copyStrings})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Add(pod); err != nil {
			t.Fatal(err)
		}
		allocs[copyStrings] = testing.AllocsPerRun(20, func() {
			got[copyStrings], _, _ = s.GetByKey(key)
		})
	}
	if allocs[true] < 3*allocs[false] {
		t.Errorf("a read allocates %.0f times shared, %.0f times with CopyStrings; want the strings copied only with CopyStrings", allocs[false], allocs[true])
	}
	if !reflect.DeepEqual(got[false], got[true]) || !reflect.DeepEqual(got[false], pod) {
		t.Error("the shared and the copying read give different objects, or not the Pod stored")
	}
}

// TestPodsDecodeShared: a store of Pods decodes its reads with a Decoder.
func TestPodsDecodeShared(t *testing.T) {
	c, err := newObjectCodec(&v1.Pod{})
	if err != nil || c.shared == nil {
		t.Fatalf("no shared decode for Pods: %v", err)
	}
}
