package boltstore

import (
	"errors"
	"math/rand"
	"path/filepath"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/protocodec"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// marshalProto returns the protobuf encoding of obj.
func marshalProto(t *testing.T, obj interface{}) []byte {
	t.Helper()
	m := obj.(protoMessage)
	data := make([]byte, m.Size())
	n, err := m.MarshalToSizedBuffer(data)
	if err != nil {
		t.Fatalf("marshal %T: %v", obj, err)
	}
	return data[len(data)-n:]
}

// unmarshalProto decodes data into a new object of struct type typ.
func unmarshalProto(t *testing.T, typ reflect.Type, data []byte) interface{} {
	t.Helper()
	p := reflect.New(typ).Interface()
	if err := p.(protoMessage).Unmarshal(data); err != nil {
		t.Fatalf("unmarshal %s: %v", typ, err)
	}
	return p
}

// mixVersions returns a copy of struct a where each field is, at random,
// a's, b's, or (a message, depth levels down) a mix of both: a's next
// version, with some fields changed and others not.
func mixVersions(rnd *rand.Rand, a, b reflect.Value, depth int) reflect.Value {
	out := reflect.New(a.Type()).Elem()
	out.Set(a)
	for i := range a.NumField() {
		if !a.Type().Field(i).IsExported() {
			continue
		}
		fa, fb := a.Field(i), b.Field(i)
		switch rnd.Intn(3) {
		case 1:
			out.Field(i).Set(fb)
		case 2:
			if depth == 0 {
				continue
			}
			switch {
			case fa.Kind() == reflect.Struct:
				out.Field(i).Set(mixVersions(rnd, fa, fb, depth-1))
			case fa.Kind() == reflect.Pointer && fa.Type().Elem().Kind() == reflect.Struct && !fa.IsNil() && !fb.IsNil():
				out.Field(i).Set(mixVersions(rnd, fa.Elem(), fb.Elem(), depth-1).Addr())
			case fa.Kind() == reflect.Slice && fa.Type().Elem().Kind() == reflect.Struct && fa.Len() > 0:
				// a's elements, some replaced by b's: a slice that changed
				// in places.
				mixed := reflect.MakeSlice(fa.Type(), fa.Len(), fa.Len())
				reflect.Copy(mixed, fa)
				for j := range min(fa.Len(), fb.Len()) {
					if rnd.Intn(2) == 0 {
						mixed.Index(j).Set(fb.Index(j))
					}
				}
				out.Field(i).Set(mixed)
			}
		}
	}
	return out
}

// TestDecodeOldDecodesTheSameEveryType fuzzes pairs of versions of every
// storable built-in type with protobuf methods, the new one sharing some
// fields with the old at random, and checks that the old version decoded
// against the new one is exactly (reflect.DeepEqual) what a full decode
// gives, while fields were in fact shared.
func TestDecodeOldDecodesTheSameEveryType(t *testing.T) {
	types, names := testutil.StorableTypes(t)
	f := testutil.TypeFuzzer(11, 3)
	rnd := rand.New(rand.NewSource(11))
	planned, sharing, nested, partial := 0, 0, 0, 0
	var sc protocodec.Scratch
	for _, name := range names {
		typ := types[name]
		c, err := newObjectCodec(reflect.New(typ).Interface().(runtime.Object))
		if err != nil {
			t.Fatal(err)
		}
		if c.share == nil {
			continue
		}
		planned++
		for range 20 {
			a, b := reflect.New(typ), reflect.New(typ)
			f.Fill(a.Interface())
			f.Fill(b.Interface())
			oldPlain := marshalProto(t, a.Interface())
			newPlain := marshalProto(t, mixVersions(rnd, a.Elem(), b.Elem(), protocodec.ShareDepth).Addr().Interface())
			newObj := unmarshalProto(t, typ, newPlain)
			got, err := c.decodeOld("k", &cachefile.Record{Codec: cachefile.CodecProtobuf, Payload: oldPlain}, newObj, newPlain)
			if err != nil {
				t.Fatalf("%s: decode old: %v", name, err)
			}
			if want := unmarshalProto(t, typ, oldPlain); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s decodes differently against its new version:\n full   %#v\n shared %#v", name, want, got)
			}
			if err := c.share.Strip(oldPlain, newPlain, &sc); err != nil {
				t.Fatalf("%s: strip: %v", name, err)
			}
			if len(sc.Shared) > 0 {
				sharing++
			}
			for _, sh := range sc.Shared {
				if sh.Depth() > 1 {
					nested++
					break
				}
			}
			for _, sh := range sc.Shared {
				if sh.Partial() {
					partial++
					break
				}
			}
		}
	}
	if planned < 100 {
		t.Fatalf("only %d types have a share plan; expected the built-in API", planned)
	}
	// Most pairs share a field; many share one inside a message, some a
	// slice element by element.
	if sharing < planned*20/2 || nested < planned*20/10 || partial < planned*20/50 {
		t.Fatalf("of %d pairs, %d shared a field, %d one inside a message, %d a slice element by element", planned*20, sharing, nested, partial)
	}
	t.Logf("%d types; of %d pairs, %d shared a field, %d one inside a message, %d a slice element by element", planned, planned*20, sharing, nested, partial)
}

// statusUpdate returns pod's next version as a kubelet status update
// makes it: a new resourceVersion, a restart counted, a condition moved.
func statusUpdate(pod *v1.Pod) *v1.Pod {
	next := pod.DeepCopy()
	next.ResourceVersion += "1"
	next.Status.ContainerStatuses[0].RestartCount++
	next.Status.Conditions[0].LastTransitionTime = metav1.NewTime(next.Status.Conditions[0].LastTransitionTime.Add(1e9))
	return next
}

func sharingPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0", Namespace: "team-a", ResourceVersion: "7", UID: "u-1",
			Labels:      map[string]string{"app": "web", "tier": "frontend"},
			Annotations: map[string]string{"prometheus.io/scrape": "true"},
		},
		Spec: v1.PodSpec{
			NodeName: "node-1",
			Containers: []v1.Container{{
				Name: "web", Image: "nginx:1.27", Args: []string{"--port=8080"},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}},
			}},
		},
		Status: v1.PodStatus{
			Phase:      v1.PodRunning,
			PodIP:      "10.0.0.7",
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Unix(1e9, 0)}},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "web", Ready: true, RestartCount: 1, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Unix(1e9, 0)}}},
				{Name: "proxy", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Unix(1e9, 0)}}},
			},
		},
	}
}

func podCodec(t *testing.T) *objectCodec {
	t.Helper()
	c, err := newObjectCodec(&v1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDecodeOldOfAStatusUpdateSharesTheRest: the old version of a Pod
// whose status changed takes its spec, labels, annotations and unchanged
// container statuses from the new version, and decodes the changed status
// and its resourceVersion.
func TestDecodeOldOfAStatusUpdateSharesTheRest(t *testing.T) {
	c := podCodec(t)
	oldPod := sharingPod()
	oldPlain := marshalProto(t, oldPod)
	newPlain := marshalProto(t, statusUpdate(oldPod))
	newPod := unmarshalProto(t, reflect.TypeFor[v1.Pod](), newPlain).(*v1.Pod)
	got, err := c.decodeOld("team-a/web-0", &cachefile.Record{Codec: cachefile.CodecProtobuf, APIVersion: "v1", Kind: "Pod", Payload: oldPlain}, newPod, newPlain)
	if err != nil {
		t.Fatal(err)
	}
	old := got.(*v1.Pod)
	want := unmarshalProto(t, reflect.TypeFor[v1.Pod](), oldPlain).(*v1.Pod)
	want.APIVersion, want.Kind = "v1", "Pod"
	if !reflect.DeepEqual(old, want) {
		t.Fatalf("old version differs from its full decode:\n full   %#v\n shared %#v", want, old)
	}
	if &old.Spec.Containers[0] != &newPod.Spec.Containers[0] {
		t.Error("the unchanged spec was decoded, not shared")
	}
	if reflect.ValueOf(old.Labels).UnsafePointer() != reflect.ValueOf(newPod.Labels).UnsafePointer() {
		t.Error("the unchanged labels (inside the changed metadata) were decoded, not shared")
	}
	if old.Status.ContainerStatuses[0].State.Running == newPod.Status.ContainerStatuses[0].State.Running {
		t.Error("the changed container status is shared")
	}
	if old.Status.ContainerStatuses[1].State.Running != newPod.Status.ContainerStatuses[1].State.Running {
		t.Error("the unchanged container status (beside the changed one) was decoded, not shared")
	}
	if old.ResourceVersion != "7" || old.Status.ContainerStatuses[0].RestartCount != 1 {
		t.Errorf("old version has the new one's values: rv %q, restarts %d", old.ResourceVersion, old.Status.ContainerStatuses[0].RestartCount)
	}
}

// TestDecodeOldOfADamagedRecord: an old payload that is not protobuf
// fails as a full decode does, with ErrCorruptRecord, whatever the new
// version is.
func TestDecodeOldOfADamagedRecord(t *testing.T) {
	c := podCodec(t)
	newPod := sharingPod()
	newPlain := marshalProto(t, newPod)
	for _, payload := range [][]byte{
		{0xff, 0xff, 0xff},            // a key that never ends
		append([]byte{0x0a, 0x7f}, 1), // metadata longer than the payload
		newPlain[:len(newPlain)-3],    // truncated inside the status
	} {
		_, err := c.decodeOld("k", &cachefile.Record{Codec: cachefile.CodecProtobuf, Payload: payload}, newPod, newPlain)
		if !errors.Is(err, cachefile.ErrCorruptRecord) {
			t.Errorf("payload % x: got %v, want ErrCorruptRecord", payload[:min(len(payload), 8)], err)
		}
	}
}

// TestApplySharesWithTheNewVersion: a store's Apply hands an update's
// handler an old object that shares the unchanged fields with the new one
// and equals what the store held.
func TestApplySharesWithTheNewVersion(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "c.db"), "pods", cachefile.Options{NoSync: true}, StoreOptions{Object: &v1.Pod{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	oldPod := sharingPod()
	if _, err := s.Apply([]Op{{Type: OpUpsert, Obj: oldPod}}, "7"); err != nil {
		t.Fatal(err)
	}
	stored, _, err := s.GetByKey("team-a/web-0")
	if err != nil {
		t.Fatal(err)
	}
	newPod := statusUpdate(oldPod)
	changes, err := s.Apply([]Op{{Type: OpUpsert, Obj: newPod}}, "71")
	if err != nil {
		t.Fatal(err)
	}
	if changes[0].Type != Updated || changes[0].OldErr != nil {
		t.Fatalf("change %v, old error %v", changes[0].Type, changes[0].OldErr)
	}
	old := changes[0].Old.(*v1.Pod)
	if !reflect.DeepEqual(old, stored) {
		t.Fatalf("old object differs from the stored one:\n stored %#v\n old    %#v", stored, old)
	}
	if &old.Spec.Containers[0] != &newPod.Spec.Containers[0] {
		t.Error("the unchanged spec was decoded, not shared")
	}
}
