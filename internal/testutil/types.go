package testutil

import (
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

// StorableTypes returns the external types of client-go's scheme that a
// store can hold (they have ObjectMeta), plus PartialObjectMetadata, by
// GroupVersionKind, and their names in order: the differential tests of
// the codec run over all of them.
func StorableTypes(t testing.TB) (map[string]reflect.Type, []string) {
	t.Helper()
	types := map[string]reflect.Type{}
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		if _, err := meta.Accessor(reflect.New(typ).Interface()); err != nil {
			continue
		}
		types[gvk.String()] = typ
	}
	types["meta.k8s.io/v1, Kind=PartialObjectMetadata"] = reflect.TypeFor[metav1.PartialObjectMetadata]()
	if len(types) < 100 {
		t.Fatalf("only %d storable types in client-go's scheme; expected the built-in API", len(types))
	}
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	return types, names
}

// TypeFuzzer fills objects of client-go's scheme from seed, with up to
// maxElements in each slice and map.
func TypeFuzzer(seed int64, maxElements int) interface{ Fill(obj interface{}) } {
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	return fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), codecs).NilChance(0.3).NumElements(0, maxElements).MaxDepth(12)
}
