package protocodec_test

import (
	"math/rand"
	"reflect"
	"testing"
	"unsafe"

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

// protoMessage is what generated protobuf code gives every built-in type.
type protoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// decodeShared decodes data into a new object of typ twice, by generated
// Unmarshal and by plan from a copy of data, and returns both objects and
// both errors.
func decodeShared(typ reflect.Type, plan *protocodec.Decoder, data []byte) (plain, shared interface{}, plainErr, sharedErr error) {
	p := reflect.New(typ)
	plainErr = p.Interface().(protoMessage).Unmarshal(data)
	s := reflect.New(typ)
	sharedErr = plan.Decode(s.UnsafePointer(), append([]byte(nil), data...))
	return p.Interface(), s.Interface(), plainErr, sharedErr
}

func marshalFilled(t *testing.T, name string, obj runtime.Object) []byte {
	t.Helper()
	m, ok := obj.(protoMessage)
	if !ok {
		t.Fatalf("%s has a decode plan but no protobuf methods", name)
	}
	data := make([]byte, m.Size())
	n, err := m.MarshalToSizedBuffer(data)
	if err != nil {
		t.Fatalf("%s: marshal: %v", name, err)
	}
	return data[len(data)-n:]
}

// TestDecoderDecodesTheSameEveryType fuzzes every storable built-in
// type with protobuf methods and checks that a Decoder gives exactly
// (reflect.DeepEqual: nil and empty differ) what generated Unmarshal
// gives, for each object's encoding and for two encodings one after the
// other (which protobuf decodes as the second merged into the first:
// scalars replaced, messages merged, repeated fields appended).
func TestDecoderDecodesTheSameEveryType(t *testing.T) {
	types, names := testutil.StorableTypes(t)
	f := testutil.TypeFuzzer(5, 3)
	planned, protobuf := 0, 0
	var unplanned []string
	for _, name := range names {
		typ := types[name]
		if _, ok := reflect.New(typ).Interface().(protoMessage); !ok {
			continue
		}
		protobuf++
		plan := protocodec.DecoderFor(typ)
		if plan == nil {
			unplanned = append(unplanned, name)
			continue
		}
		planned++
		for i := range 20 {
			obj := reflect.New(typ).Interface().(runtime.Object)
			f.Fill(obj)
			data := marshalFilled(t, name, obj)
			if i%4 == 3 {
				other := reflect.New(typ).Interface().(runtime.Object)
				f.Fill(other)
				data = append(data, marshalFilled(t, name, other)...)
			}
			plain, shared, plainErr, sharedErr := decodeShared(typ, plan, data)
			if plainErr != nil || sharedErr != nil {
				t.Fatalf("%s: decode: generated %v, Decoder %v", name, plainErr, sharedErr)
			}
			if !reflect.DeepEqual(plain, shared) {
				t.Fatalf("%s decodes differently:\n generated   %#v\n Decoder     %#v", name, plain, shared)
			}
		}
	}
	if len(unplanned) > 0 {
		t.Errorf("no decode plan for %d of %d protobuf types: %v", len(unplanned), protobuf, unplanned)
	}
	if planned < 100 {
		t.Fatalf("only %d types have a decode plan; expected the built-in API", planned)
	}
}

// TestDecoderOnDamagedPayloads: a truncated or altered encoding fails
// in a Decoder where it fails in generated Unmarshal, and where both
// succeed they give the same object: many damaged Pods, and a few of
// every other type.
func TestDecoderOnDamagedPayloads(t *testing.T) {
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(3), codecs).NilChance(0.2).NumElements(1, 3).MaxDepth(10)
	rnd := rand.New(rand.NewSource(17))
	damage := func(t *testing.T, name string, typ reflect.Type, objects, damages int) {
		plan := protocodec.DecoderFor(typ)
		for i := range objects {
			obj := reflect.New(typ).Interface().(runtime.Object)
			f.Fill(obj)
			data := marshalFilled(t, name, obj)
			if len(data) == 0 {
				continue
			}
			for j := range damages {
				bad := damaged(rnd, data, j%4)
				plain, shared, plainErr, sharedErr := decodeShared(typ, plan, bad)
				if (plainErr == nil) != (sharedErr == nil) {
					t.Fatalf("%s %d, damage %d: generated %v, Decoder %v", name, i, j, plainErr, sharedErr)
				}
				if plainErr == nil && !reflect.DeepEqual(plain, shared) {
					t.Fatalf("%s %d, damage %d: decodes differently:\n generated   %#v\n Decoder     %#v", name, i, j, plain, shared)
				}
			}
		}
	}
	damage(t, "Pod", reflect.TypeFor[v1.Pod](), 40, 100)
	types, names := testutil.StorableTypes(t)
	for _, name := range names {
		if protocodec.DecoderFor(types[name]) != nil {
			damage(t, name, types[name], 2, 50)
		}
	}
}

// damaged returns a damaged copy of data (not empty): cut at random (kind
// 0), a byte changed (1), the rest random from a point on (2), or a few
// bytes set at random (3).
func damaged(rnd *rand.Rand, data []byte, kind int) []byte {
	bad := append([]byte(nil), data...)
	switch kind {
	case 0:
		bad = bad[:rnd.Intn(len(bad)+1)]
	case 1:
		bad[rnd.Intn(len(bad))] ^= byte(1 + rnd.Intn(255))
	case 2:
		for k := rnd.Intn(len(bad)); k < len(bad); k++ {
			bad[k] = byte(rnd.Intn(256))
		}
	case 3:
		for range 1 + rnd.Intn(4) {
			bad[rnd.Intn(len(bad))] = byte(rnd.Intn(256))
		}
	}
	return bad
}

// TestDecoderSharesTheBuffer: the strings and byte slices of a
// decoded object point into the buffer, and a byte slice has no room
// past its end (an append to it copies rather than overwrite its
// neighbours in the buffer).
func TestDecoderSharesTheBuffer(t *testing.T) {
	pod := testutil.Pod("ns-07", "pod-00007", "8", testutil.Label("label-3", "v"), testutil.UID("00000000-0000-0000-0000-000000000007"))
	pod.Annotations = map[string]string{"note": "an annotation"}
	pod.Spec.Containers = []v1.Container{{Name: "c", Image: "registry.example/app:1"}}
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}}
	data, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Pod
	if err := protocodec.DecoderFor(reflect.TypeFor[v1.Pod]()).Decode(unsafe.Pointer(&got), data); err != nil {
		t.Fatal(err)
	}
	in := func(p unsafe.Pointer, n int) bool {
		lo, hi := uintptr(unsafe.Pointer(&data[0])), uintptr(unsafe.Pointer(&data[0]))+uintptr(len(data))
		return n == 0 || (uintptr(p) >= lo && uintptr(p)+uintptr(n) <= hi)
	}
	for what, s := range map[string]string{
		"name": got.Name, "namespace": got.Namespace, "image": got.Spec.Containers[0].Image,
		"label": got.Labels["label-3"], "annotation key": firstKey(got.Annotations),
	} {
		if s == "" || !in(unsafe.Pointer(unsafe.StringData(s)), len(s)) {
			t.Errorf("%s %q is not in the buffer", what, s)
		}
	}
	raw := got.ManagedFields[0].FieldsV1.Raw
	if !in(unsafe.Pointer(unsafe.SliceData(raw)), len(raw)) || cap(raw) != len(raw) {
		t.Errorf("fieldsV1 raw: in the buffer %v, len %d cap %d; want in it, no spare room", in(unsafe.Pointer(unsafe.SliceData(raw)), len(raw)), len(raw), cap(raw))
	}
	grown := append(raw, '!')
	if &grown[0] == &raw[0] {
		t.Fatal("an append to a shared []byte wrote into the buffer")
	}
	if !reflect.DeepEqual(&got, decodePlain(t, data)) {
		t.Fatal("decodes differently from generated Unmarshal")
	}
}

func decodePlain(t *testing.T, data []byte) *v1.Pod {
	t.Helper()
	var p v1.Pod
	if err := p.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	return &p
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// unplannedType has a field a Decoder does not decode (an int): it
// has none, and the store decodes it with its own Unmarshal.
type unplannedType struct {
	v1.Pod
	Count int `protobuf:"varint,99,opt,name=count"`
}

func TestDecoderNoPlan(t *testing.T) {
	if p := protocodec.DecoderFor(reflect.TypeFor[unplannedType]()); p != nil {
		t.Fatal("a plan for a type with an int field")
	}
	if p := protocodec.DecoderFor(reflect.TypeFor[v1.Pod]()); p == nil {
		t.Fatal("no decoder for Pods")
	}
}
