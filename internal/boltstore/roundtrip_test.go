package boltstore

import (
	"encoding/json"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// roundTrip encodes obj into a record and decodes it back, as a store does.
func roundTrip(t *testing.T, obj runtime.Object) runtime.Object {
	t.Helper()
	c, err := newObjectCodec(obj)
	if err != nil {
		t.Fatalf("codec for %T: %v", obj, err)
	}
	rec, _, _, err := newRecord(c, "k", obj, nil, new([]byte), new([]byte))
	if err != nil {
		t.Fatalf("record for %T: %v", obj, err)
	}
	rec.SetValues("idx", []string{"a", "b"})
	enc, err := cachefile.EncodeRecord([]byte("key"), rec)
	if err != nil {
		t.Fatalf("encode %T: %v", obj, err)
	}
	back, err := cachefile.DecodeRecord([]byte("key"), enc)
	if err != nil {
		t.Fatalf("decode envelope %T: %v", obj, err)
	}
	if !reflect.DeepEqual(back.Values("idx"), []string{"a", "b"}) {
		t.Fatalf("index values lost: %v", back.Index)
	}
	out, err := c.decode("k", back)
	if err != nil {
		t.Fatalf("decode %T: %v", obj, err)
	}
	return out
}

// TestCodecRoundTripEveryType fuzzes every storable built-in type and checks
// that each object, and its unstructured form, comes back semantically equal.
func TestCodecRoundTripEveryType(t *testing.T) {
	types, names := testutil.StorableTypes(t)
	f := testutil.TypeFuzzer(42, 2)
	protobufTypes := 0
	for _, name := range names {
		typ := types[name]
		for i := 0; i < 20; i++ {
			obj := reflect.New(typ).Interface().(runtime.Object)
			f.Fill(obj)
			if c, _ := newObjectCodec(obj); c.id == cachefile.CodecProtobuf && i == 0 {
				protobufTypes++
			}
			got := roundTrip(t, obj)
			if !apiequality.Semantic.DeepEqual(obj, got) {
				t.Fatalf("%s does not round-trip:\n in  %#v\n out %#v", name, obj, got)
			}
			// The same object as unstructured (how CRDs and dynamic informers hold it).
			raw, err := json.Marshal(obj)
			if err != nil {
				t.Fatalf("%s: json: %v", name, err)
			}
			u := &unstructured.Unstructured{Object: map[string]interface{}{}}
			if err := utiljson.Unmarshal(raw, &u.Object); err != nil {
				t.Fatalf("%s: unstructured: %v", name, err)
			}
			if gotU := roundTrip(t, u); !apiequality.Semantic.DeepEqual(u, gotU) {
				t.Fatalf("%s unstructured does not round-trip:\n in  %#v\n out %#v", name, u, gotU)
			}
		}
	}
	if protobufTypes < 100 {
		t.Fatalf("only %d types used the protobuf codec", protobufTypes)
	}
	t.Logf("%d types round-tripped, %d with protobuf payloads", len(names), protobufTypes)
}

// TestCodecKeepsQuantityAndManagedFields pins the two losses that naive
// msgpack of typed structs has (docs/design.md, "Measured": Quantity and
// FieldsV1).
func TestCodecKeepsQuantityAndManagedFields(t *testing.T) {
	pod := &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)},
			}},
		},
	}
	pod.Spec.Containers = []v1.Container{{Name: "c"}}
	pod.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: mustQuantity("250m")}
	got := roundTrip(t, pod).(*v1.Pod)
	if q := got.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]; q.String() != "250m" {
		t.Errorf("cpu request came back %q, want 250m", q.String())
	}
	if got.ManagedFields[0].FieldsV1 == nil || string(got.ManagedFields[0].FieldsV1.Raw) != `{"f:spec":{}}` {
		t.Errorf("managedFields lost: %#v", got.ManagedFields)
	}
	if got.APIVersion != "v1" || got.Kind != "Pod" {
		t.Errorf("TypeMeta lost: %#v", got.TypeMeta)
	}
}
