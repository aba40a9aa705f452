package boltstore

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

func seedRecord(t testing.TB) []byte {
	c, _ := newObjectCodec(&v1.Pod{})
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "5", Labels: map[string]string{"a": "b"}}}
	rec, _, _, err := newRecord(c, "k", p, nil, new([]byte), new([]byte))
	if err != nil {
		t.Fatal(err)
	}
	rec.SetValues("namespace", []string{"ns"})
	b, err := cachefile.EncodeRecord([]byte("ns/p"), rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeRecord: no byte string makes record or payload decoding panic,
// and no byte string other than a valid record under its own key decodes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(seedRecord(f))
	f.Add([]byte{})
	f.Add([]byte{0x93, 0xff, 0x00})
	f.Add([]byte{0x98, 0x01, 0xa1, 0x31})
	pod, _ := newObjectCodec(&v1.Pod{})
	unst, _ := newObjectCodec(&unstructured.Unstructured{})
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := cachefile.DecodeRecord([]byte("ns/p"), data)
		if err != nil {
			return
		}
		_, _ = pod.decode("k", rec)
		_, _ = unst.decode("k", rec)
	})
}

// FuzzCodecRoundTrip: any JSON object that is a valid Pod (or unstructured
// content) comes back from a record semantically equal.
func FuzzCodecRoundTrip(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"p","namespace":"ns","resourceVersion":"1"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"250m"}}}]}}`))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]}}`))
	f.Add([]byte(`{"metadata":{"name":"n","labels":{"a":"b"}},"status":{"phase":"Running","podIP":"10.0.0.1"}}`))
	pod, _ := newObjectCodec(&v1.Pod{})
	unst, _ := newObjectCodec(&unstructured.Unstructured{})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &v1.Pod{}
		if err := utiljson.Unmarshal(data, p); err == nil {
			rec, _, _, err := newRecord(pod, "k", p, nil, new([]byte), new([]byte))
			if err != nil {
				t.Fatalf("record: %v", err)
			}
			enc, err := cachefile.EncodeRecord([]byte("k"), rec)
			if err != nil {
				t.Fatal(err)
			}
			back, err := cachefile.DecodeRecord([]byte("k"), enc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pod.decode("k", back)
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(p, got) {
				t.Fatalf("pod does not round-trip:\n in  %#v\n out %#v", p, got)
			}
		}
		u := &unstructured.Unstructured{}
		if err := utiljson.Unmarshal(data, &u.Object); err == nil && u.Object != nil {
			rec, _, _, err := newRecord(unst, "k", u, nil, new([]byte), new([]byte))
			if err != nil {
				return // no usable metadata: refused, not a round-trip case
			}
			enc, _ := cachefile.EncodeRecord([]byte("k"), rec)
			back, err := cachefile.DecodeRecord([]byte("k"), enc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := unst.decode("k", back)
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(u, got) {
				t.Fatalf("unstructured does not round-trip:\n in  %#v\n out %#v", u, got)
			}
		}
	})
}
