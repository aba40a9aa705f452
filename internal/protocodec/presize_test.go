package protocodec_test

import (
	"math/rand"
	"reflect"
	goruntime "runtime"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/boltinformer/boltinformer/internal/protocodec"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// decodeBoth decodes data into a new object of typ twice, as generated
// Unmarshal does alone and after plan presized it, and returns both
// objects and both errors.
func decodeBoth(typ reflect.Type, plan *protocodec.Presizer, data []byte) (plain, sized interface{}, plainErr, sizedErr error) {
	p := reflect.New(typ)
	plainErr = p.Interface().(protoMessage).Unmarshal(data)
	s := reflect.New(typ)
	plan.Presize(s.Elem(), data)
	sizedErr = s.Interface().(protoMessage).Unmarshal(data)
	return p.Interface(), s.Interface(), plainErr, sizedErr
}

// TestPresizeDecodesTheSameEveryType fuzzes every storable built-in type
// with protobuf methods and checks that a presized decode gives exactly
// (reflect.DeepEqual: nil and empty differ) what generated Unmarshal gives
// alone.
func TestPresizeDecodesTheSameEveryType(t *testing.T) {
	types, names := testutil.StorableTypes(t)
	f := testutil.TypeFuzzer(7, 3)
	planned := 0
	for _, name := range names {
		typ := types[name]
		plan := protocodec.PresizerFor(typ)
		if plan == nil {
			continue
		}
		planned++
		for range 20 {
			obj := reflect.New(typ).Interface().(runtime.Object)
			f.Fill(obj)
			m, ok := obj.(protoMessage)
			if !ok {
				t.Fatalf("%s has a size plan but no protobuf methods", name)
			}
			data := make([]byte, m.Size())
			n, err := m.MarshalToSizedBuffer(data)
			if err != nil {
				t.Fatalf("%s: marshal: %v", name, err)
			}
			plain, sized, plainErr, sizedErr := decodeBoth(typ, plan, data[len(data)-n:])
			if plainErr != nil || sizedErr != nil {
				t.Fatalf("%s: decode: plain %v, presized %v", name, plainErr, sizedErr)
			}
			if !reflect.DeepEqual(plain, sized) {
				t.Fatalf("%s decodes differently when presized:\n plain    %#v\n presized %#v", name, plain, sized)
			}
		}
	}
	if planned < 100 {
		t.Fatalf("only %d types have a size plan; expected the built-in API", planned)
	}
	t.Logf("%d of %d types presized", planned, len(names))
}

// TestPresizeSizesPodsFields: the slices and maps of a Pod that Unmarshal
// fills in place come out exactly as large as they need to be, and no
// field the payload lacks is made.
func TestPresizeSizesPodsFields(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Labels: map[string]string{"a": "1", "b": "2", "c": "3"},
			OwnerReferences: []metav1.OwnerReference{{Name: "o1"}, {Name: "o2"}},
		},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			Volumes:    []v1.Volume{{Name: "v"}, {Name: "w"}, {Name: "x"}, {Name: "y"}, {Name: "z"}},
			SecurityContext: &v1.PodSecurityContext{
				Sysctls: []v1.Sysctl{{Name: "s1"}, {Name: "s2"}, {Name: "s3"}},
			},
		},
		Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: "Ready"}, {Type: "Initialized"}, {Type: "X"}}},
	}
	data, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Pod
	protocodec.PresizerFor(reflect.TypeFor[v1.Pod]()).Presize(reflect.ValueOf(&got).Elem(), data)
	for what, c := range map[string][2]int{
		"ownerReferences":          {cap(got.OwnerReferences), 2},
		"containers":               {cap(got.Spec.Containers), 3},
		"volumes":                  {cap(got.Spec.Volumes), 5},
		"securityContext.sysctls":  {cap(got.Spec.SecurityContext.Sysctls), 3},
		"conditions":               {cap(got.Status.Conditions), 3},
		"containerStatuses (none)": {cap(got.Status.ContainerStatuses), 0},
	} {
		if c[0] != c[1] {
			t.Errorf("%s: capacity %d before Unmarshal, want %d", what, c[0], c[1])
		}
	}
	if got.Labels == nil || got.Status.ContainerStatuses != nil || got.Spec.Affinity != nil {
		t.Errorf("presize made labels %v, containerStatuses %v, affinity %v; want only the fields the payload has", got.Labels, got.Status.ContainerStatuses, got.Spec.Affinity)
	}
	if err := got.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	if cap(got.Spec.Containers) != 3 || !reflect.DeepEqual(&got, pod) {
		t.Errorf("after Unmarshal: containers cap %d, equal %v", cap(got.Spec.Containers), reflect.DeepEqual(&got, pod))
	}
}

// TestPresizeOnDamagedPayloads: presizing a truncated or altered payload
// never panics, and the decode that follows fails, or succeeds with the
// same object, exactly as it does without it.
func TestPresizeOnDamagedPayloads(t *testing.T) {
	typ := reflect.TypeFor[v1.Pod]()
	plan := protocodec.PresizerFor(typ)
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(3), codecs).NilChance(0.2).NumElements(1, 3).MaxDepth(10)
	rnd := rand.New(rand.NewSource(11))
	for i := range 30 {
		pod := &v1.Pod{}
		f.Fill(pod)
		data, err := pod.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		for j := range 40 {
			bad := damaged(rnd, data, j%3)
			plain, sized, plainErr, sizedErr := decodeBoth(typ, plan, bad)
			if (plainErr == nil) != (sizedErr == nil) || (plainErr != nil && plainErr.Error() != sizedErr.Error()) {
				t.Fatalf("pod %d, damage %d: plain decode %v, presized %v", i, j, plainErr, sizedErr)
			}
			if plainErr == nil && !reflect.DeepEqual(plain, sized) {
				t.Fatalf("pod %d, damage %d: decodes differently when presized", i, j)
			}
		}
	}
}

// sizeNode is a recursive message type, as JSONSchemaProps of CRDs is.
type sizeNode struct {
	Children []sizeNode `protobuf:"bytes,1,rep,name=children"`
	Next     *sizeNode  `protobuf:"bytes,2,opt,name=next"`
}

func (*sizeNode) Unmarshal([]byte) error { return nil }

// TestPresizeRecursiveType: a type that holds itself gets a plan (building
// it ends), and presizing follows the payload's nesting.
func TestPresizeRecursiveType(t *testing.T) {
	plan := protocodec.PresizerFor(reflect.TypeFor[sizeNode]())
	if plan == nil {
		t.Fatal("no plan for a recursive type with a repeated field")
	}
	// next { children {} children {} children {} }, then one child.
	data := []byte{0x12, 0x06, 0x0a, 0x00, 0x0a, 0x00, 0x0a, 0x00, 0x0a, 0x00}
	var n sizeNode
	plan.Presize(reflect.ValueOf(&n).Elem(), data)
	if n.Next == nil || cap(n.Next.Children) != 3 || cap(n.Children) != 1 || n.Next.Next != nil {
		t.Fatalf("presized %+v; want next with room for 3 children and room for 1 child", n)
	}
}

// TestPresizeBoundedByPayload: Presize counts records, not what Unmarshal
// keeps of them. A payload of many empty containers that Unmarshal rejects
// at its first, or a ConfigMap repeating one data entry, would make a slice
// or map hundreds of times the payload; what Presize makes stays within
// twice the payload and 64 KB.
func TestPresizeBoundedByPayload(t *testing.T) {
	const records = 1 << 18
	// A PodSpec whose first container holds an illegal tag (0, wire type 7),
	// then empty containers, in a Pod's spec (field 2).
	spec := []byte{0x12, 0x01, 0x07}
	for range records - 1 {
		spec = append(spec, 0x12, 0x00)
	}
	pod := append(protowire.AppendVarint([]byte{0x12}, uint64(len(spec))), spec...)
	// A ConfigMap's data (field 2) entry {key "", value ""}, repeated.
	var configMap []byte
	for range records {
		configMap = append(configMap, 0x12, 0x00)
	}
	for _, tc := range []struct {
		name    string
		typ     reflect.Type
		payload []byte
	}{
		{"empty containers after a bad one", reflect.TypeFor[v1.Pod](), pod},
		{"one data entry repeated", reflect.TypeFor[v1.ConfigMap](), configMap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := protocodec.PresizerFor(tc.typ)
			obj := reflect.New(tc.typ)
			made := allocatedBy(func() { plan.Presize(obj.Elem(), tc.payload) })
			if limit := 2*uint64(len(tc.payload)) + 64<<10 + 8<<10; made > limit {
				t.Fatalf("presizing a %d KB payload made %d KB, more than twice the payload and 64 KB", len(tc.payload)>>10, made>>10)
			}
			plain, sized, plainErr, sizedErr := decodeBoth(tc.typ, plan, tc.payload)
			if (plainErr == nil) != (sizedErr == nil) || !reflect.DeepEqual(plain, sized) {
				t.Fatalf("presized decode differs: %v / %v", plainErr, sizedErr)
			}
		})
	}
}

// allocatedBy returns the bytes f allocates on the heap.
func allocatedBy(f func()) uint64 {
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	f()
	goruntime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
