package reflector

import (
	"bytes"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// receivedEncodings remembers at most its bounds, of objects and of bytes.
// At the bounds it keeps the objects it has, which are taken first, and
// forgets only those passed by (kept before an object already taken); a
// taken object is held by nothing.
func TestReceivedEncodingsBounds(t *testing.T) {
	r := newReceivedEncodings(8, 1000)
	objs := make([]runtime.Object, 20)
	for i := range objs {
		objs[i] = &corev1.Pod{}
	}
	remembered := func(want ...int) {
		t.Helper()
		var got []int
		for i, obj := range objs {
			r.mu.Lock()
			_, ok := r.objects[obj]
			r.mu.Unlock()
			if ok {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("remembers objects %v, want %v", got, want)
		}
	}
	take := func(i int) {
		t.Helper()
		if b, ok := r.take(objs[i]); !ok || b[0] != byte(i) {
			t.Fatalf("object %d: take gave %v %v", i, b, ok)
		}
	}
	for i := range 10 {
		r.keep(objs[i], []byte{byte(i)})
	}
	remembered(0, 1, 2, 3, 4, 5, 6, 7) // full: 8 and 9 were not kept
	take(0)
	take(1)
	r.keep(objs[10], []byte{10})
	r.keep(objs[11], []byte{11})
	remembered(2, 3, 4, 5, 6, 7, 10, 11)
	// Taking 5 passes 2, 3 and 4 by: they make room, and so does 5's
	// slot; 6 and 7 do not.
	take(5)
	for i := 12; i < 17; i++ {
		r.keep(objs[i], []byte{byte(i)})
	}
	remembered(6, 7, 10, 11, 12, 13, 14, 15)
	if n, b := r.len(); n != 8 || b != 8 {
		t.Fatalf("remembers %d objects of %d bytes, want 8 of 8", n, b)
	}
	for _, i := range []int{6, 7, 10, 11, 12, 13, 14, 15} {
		take(i)
	}
	for slot, obj := range r.ring {
		if obj != nil {
			t.Errorf("slot %d still holds an object after every object was taken", slot)
		}
	}

	// By bytes: 400 + 400 fit in 1000, a third 400 waits for room, and
	// more than the bound is never kept.
	big := []runtime.Object{&corev1.Pod{}, &corev1.Pod{}, &corev1.Pod{}, &corev1.Pod{}}
	for _, obj := range big[:3] {
		r.keep(obj, make([]byte, 400))
	}
	r.keep(big[3], make([]byte, 1001))
	if n, b := r.len(); n != 2 || b != 800 {
		t.Fatalf("remembers %d objects of %d bytes, want 2 of 800", n, b)
	}
	for i, obj := range big {
		if _, ok := r.take(obj); ok != (i == 0 || i == 1) {
			t.Errorf("object %d of 400/1001 bytes: remembered %v", i, ok)
		}
	}

	// A value (not a pointer) is never remembered: it has no identity, and
	// this one cannot even key a map.
	v := valueObject{labels: map[string]string{}}
	r.keep(v, []byte{1})
	if _, ok := r.take(v); ok {
		t.Error("a value object was remembered")
	}
	if n, b := r.len(); n != 0 || b != 0 {
		t.Errorf("remembers %d objects of %d bytes after all were taken", n, b)
	}
}

// valueObject is a runtime.Object held by value, with a map field.
type valueObject struct{ labels map[string]string }

func (v valueObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (v valueObject) DeepCopyObject() runtime.Object   { return v }

// openEnvelope reads what runtime.Unknown's Unmarshal reads, without the
// copy: on every prefix and every one-byte change of a real envelope, when
// it succeeds, Unmarshal succeeds too with the same fields.
func TestOpenEnvelopeAgreesWithUnknown(t *testing.T) {
	pod, err := (&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: pod, ContentType: runtime.ContentTypeProtobuf}
	b, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	good := append(append([]byte{}, protobufMagic...), b...)
	env, ok := openEnvelope(good)
	if !ok || env.apiVersion != "v1" || env.kind != "Pod" || !bytes.Equal(env.payload, pod) || env.contentType != runtime.ContentTypeProtobuf {
		t.Fatalf("openEnvelope(good) = %+v, %v", env, ok)
	}
	check := func(raw []byte) {
		env, ok := openEnvelope(raw)
		if !ok {
			return
		}
		var u runtime.Unknown
		if err := u.Unmarshal(raw[len(protobufMagic):]); err != nil {
			t.Fatalf("openEnvelope read %q, Unknown.Unmarshal rejects it: %v", raw, err)
		}
		if env.apiVersion != u.APIVersion || env.kind != u.Kind || !bytes.Equal(env.payload, u.Raw) ||
			env.contentType != u.ContentType || env.contentEncoding != u.ContentEncoding {
			t.Fatalf("%q: openEnvelope %+v, Unknown %+v", raw, env, u)
		}
	}
	for n := len(protobufMagic); n <= len(good); n++ {
		check(good[:n])
	}
	for i := len(protobufMagic); i < len(good); i++ {
		for _, v := range []byte{0x00, 0x01, 0x08, 0x0a, 0x12, 0x7f, 0x80, 0xff, good[i] ^ 0x40} {
			bad := append([]byte{}, good...)
			bad[i] = v
			check(bad)
		}
	}
}
