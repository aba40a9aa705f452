package protocodec_test

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer/internal/protocodec"
)

type message interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func marshal(t *testing.T, m message) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeAgainst decodes old as Strip and Apply make a store do, against
// newBytes and newObj (a pointer to a struct of typ).
func decodeAgainst(t *testing.T, typ reflect.Type, old, newBytes []byte, newObj any) (any, []protocodec.Shared) {
	t.Helper()
	var sc protocodec.Scratch
	if err := protocodec.SharerFor(typ).Strip(old, newBytes, &sc); err != nil {
		t.Fatal(err)
	}
	out := reflect.New(typ)
	rest := old
	if len(sc.Shared) > 0 {
		rest = sc.Rest
	}
	if err := out.Interface().(message).Unmarshal(rest); err != nil {
		t.Fatal(err)
	}
	if err := protocodec.ApplyShared(out, reflect.ValueOf(newObj), sc.Shared); err != nil {
		t.Fatal(err)
	}
	return out.Interface(), append([]protocodec.Shared(nil), sc.Shared...)
}

// TestStripIdenticalVersions: two identical encodings share every field,
// and the old object decodes from nothing at all.
func TestStripIdenticalVersions(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "1"}},
		Spec:       v1.PodSpec{NodeName: "n", Containers: []v1.Container{{Name: "c"}}},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
	b := marshal(t, pod)
	newPod := &v1.Pod{}
	if err := newPod.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	var sc protocodec.Scratch
	if err := protocodec.SharerFor(reflect.TypeFor[v1.Pod]()).Strip(b, b, &sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.Rest) != 0 || len(sc.Shared) != 3 {
		t.Fatalf("rest of %d bytes, %d fields shared; want nothing left and metadata, spec and status shared", len(sc.Rest), len(sc.Shared))
	}
	got, _ := decodeAgainst(t, reflect.TypeFor[v1.Pod](), b, b, newPod)
	if !reflect.DeepEqual(got, newPod) {
		t.Fatalf("got %#v, want %#v", got, newPod)
	}
}

// field appends a field of wire type bytes.
func field(b []byte, num int, value []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

// TestStripInterleavedRepeatedField: a repeated field whose occurrences
// are not next to each other is decoded, never shared, even when both
// versions encode it the same; the fields around it are still shared.
func TestStripInterleavedRepeatedField(t *testing.T) {
	// ObjectMeta: name 1, labels 11 (map entries: key 1, value 2).
	entry := func(k, v string) []byte { return field(field(nil, 1, []byte(k)), 2, []byte(v)) }
	var b []byte
	b = field(b, 11, entry("a", "1"))
	b = field(b, 1, []byte("name"))
	b = field(b, 11, entry("b", "2"))
	typ := reflect.TypeFor[metav1.ObjectMeta]()
	newMeta := &metav1.ObjectMeta{}
	if err := newMeta.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	got, shared := decodeAgainst(t, typ, b, b, newMeta)
	if len(shared) != 1 {
		t.Fatalf("%d fields shared, want only the name", len(shared))
	}
	if !reflect.DeepEqual(got, newMeta) {
		t.Fatalf("got %#v, want %#v", got, newMeta)
	}
	if reflect.ValueOf(got.(*metav1.ObjectMeta).Labels).UnsafePointer() == reflect.ValueOf(newMeta.Labels).UnsafePointer() {
		t.Fatal("the interleaved labels are shared")
	}
}

// TestStripGarbage: bytes that are not protobuf are an error wrapping
// ErrNotProtobuf, which sends the caller to a full decode.
func TestStripGarbage(t *testing.T) {
	good := marshal(t, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	plan := protocodec.SharerFor(reflect.TypeFor[v1.Pod]())
	for _, bad := range [][]byte{{0xff, 0xff}, {0x0a, 0x40, 1}, {0x0b}} {
		var sc protocodec.Scratch
		for _, pair := range [][2][]byte{{bad, good}, {good, bad}} {
			if err := plan.Strip(pair[0], pair[1], &sc); !errors.Is(err, protocodec.ErrNotProtobuf) {
				t.Errorf("strip % x against % x: %v, want ErrNotProtobuf", pair[0], pair[1], err)
			}
			if len(sc.Shared) != 0 || len(sc.Rest) != 0 {
				t.Errorf("a failed strip left %d shared fields and %d bytes", len(sc.Shared), len(sc.Rest))
			}
		}
	}
}

// TestApplyMissingMessage: a pointer message compared field by field that
// the new object lacks is an error, not a panic.
func TestApplyMissingMessage(t *testing.T) {
	seccomp := &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
	oldSpec := &v1.PodSpec{SecurityContext: &v1.PodSecurityContext{RunAsUser: ptr(int64(1)), SeccompProfile: seccomp}}
	newSpec := &v1.PodSpec{SecurityContext: &v1.PodSecurityContext{RunAsUser: ptr(int64(2)), SeccompProfile: seccomp}}
	var sc protocodec.Scratch
	if err := protocodec.SharerFor(reflect.TypeFor[v1.PodSpec]()).Strip(marshal(t, oldSpec), marshal(t, newSpec), &sc); err != nil {
		t.Fatal(err)
	}
	nested := false
	for _, sh := range sc.Shared {
		nested = nested || sh.Depth() == 2
	}
	if !nested {
		t.Fatalf("shared %v; want the security context's seccomp profile among them", sc.Shared)
	}
	decoded := &v1.PodSpec{}
	if err := decoded.Unmarshal(sc.Rest); err != nil {
		t.Fatal(err)
	}
	newSpec.SecurityContext = nil // no longer what its bytes decode to
	if err := protocodec.ApplyShared(reflect.ValueOf(decoded), reflect.ValueOf(newSpec), sc.Shared); err == nil {
		t.Fatal("applied a field of a message the new object lacks")
	}
}

func ptr[T any](v T) *T { return &v }

// TestApplySliceOfAnotherLength: a slice shared element by element whose
// new version has another length than its encoding gave is an error.
func TestApplySliceOfAnotherLength(t *testing.T) {
	cond := func(typ v1.PodConditionType, status v1.ConditionStatus) v1.PodCondition {
		return v1.PodCondition{Type: typ, Status: status}
	}
	oldStatus := &v1.PodStatus{Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse), cond(v1.PodScheduled, v1.ConditionTrue)}}
	newStatus := &v1.PodStatus{Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue), cond(v1.PodScheduled, v1.ConditionTrue)}}
	var sc protocodec.Scratch
	if err := protocodec.SharerFor(reflect.TypeFor[v1.PodStatus]()).Strip(marshal(t, oldStatus), marshal(t, newStatus), &sc); err != nil {
		t.Fatal(err)
	}
	partial := false
	for _, sh := range sc.Shared {
		partial = partial || sh.Partial()
	}
	if !partial {
		t.Fatalf("shared %v; want the conditions element by element", sc.Shared)
	}
	decoded := func() *v1.PodStatus {
		d := &v1.PodStatus{}
		if err := d.Unmarshal(sc.Rest); err != nil {
			t.Fatal(err)
		}
		return d
	}
	got := decoded()
	if err := protocodec.ApplyShared(reflect.ValueOf(got), reflect.ValueOf(newStatus), sc.Shared); err != nil || !reflect.DeepEqual(got, oldStatus) {
		t.Fatalf("Apply: %v, got %#v, want %#v", err, got, oldStatus)
	}
	newStatus.Conditions = newStatus.Conditions[:1] // no longer what its bytes decode to
	if err := protocodec.ApplyShared(reflect.ValueOf(decoded()), reflect.ValueOf(newStatus), sc.Shared); err == nil {
		t.Fatal("applied a slice of another length")
	}
}
