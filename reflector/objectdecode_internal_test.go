package reflector

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// noResetWidget has Unmarshal but no Reset (its TypeMeta is not embedded,
// which would bring TypeMeta's Reset): the protobuf serializer does not
// decode into it.
type noResetWidget struct {
	TypeMeta metav1.TypeMeta
	Data     string
}

func (w *noResetWidget) GetObjectKind() schema.ObjectKind  { return &w.TypeMeta }
func (w *noResetWidget) DeepCopyObject() k8sruntime.Object { c := *w; return &c }
func (w *noResetWidget) Unmarshal(b []byte) error          { w.Data = string(b); return nil }

// A protobuf object of a type the protobuf serializer refuses (it has
// Unmarshal but not Reset) ends the watch with an ERROR event, as through
// client-go's watch, instead of being decoded by its Unmarshal.
func TestDecodeRefusesWhatTheSerializerRefuses(t *testing.T) {
	s := k8sruntime.NewScheme()
	metav1.AddToGroupVersion(s, corev1.SchemeGroupVersion)
	s.AddKnownTypeWithName(corev1.SchemeGroupVersion.WithKind("Widget"), &noResetWidget{})
	codecs := serializer.NewCodecFactory(s)

	unk := k8sruntime.Unknown{TypeMeta: k8sruntime.TypeMeta{APIVersion: "v1", Kind: "Widget"}, Raw: []byte("\x0a\x01x")}
	b, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	info, _ := k8sruntime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaTypeProtobuf)
	var body bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&body), info.StreamSerializer.Serializer)
	event := &metav1.WatchEvent{Type: string(watch.Added), Object: k8sruntime.RawExtension{Raw: append([]byte("k8s\x00"), b...)}}
	if err := enc.Encode(event); err != nil {
		t.Fatal(err)
	}

	// What rest.Request.Watch builds over the same body.
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(body.Bytes())))
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer),
		codecs.WithoutConversion().DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion))
	want := collectEvents(watch.NewStreamWatcher(dec, apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")))
	got := collectEvents(newParallelWatch(context.Background(), io.NopCloser(bytes.NewReader(body.Bytes())), s, codecs.WithoutConversion(), 2, false))
	if len(want) != 1 || want[0].Type != watch.Error {
		t.Fatalf("client-go's watch gave %v, want one ERROR event", want)
	}
	if len(got) != 1 || got[0].Type != watch.Error {
		t.Fatalf("got %v; client-go's watch gives ERROR %v", got, apierrors.FromObject(want[0].Object))
	}
}

// collectEvents reads w until its ResultChan closes.
func collectEvents(w watch.Interface) []watch.Event {
	defer w.Stop()
	var out []watch.Event
	for e := range w.ResultChan() {
		out = append(out, e)
	}
	return out
}

// sharePod is a Pod of many strings.
func sharePod(i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: fmt.Sprint("p", i), ResourceVersion: fmt.Sprint(i + 1),
		Labels: map[string]string{"app": "a", "tier": "t"}, Annotations: map[string]string{"note": "n"},
	}}
	for c := range 10 {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: fmt.Sprint("c", c), Image: "registry.example/image:1", Args: []string{"--a", "--b"},
			Env: []corev1.EnvVar{{Name: "E", Value: "v"}},
		})
	}
	return p
}

// TestWatchObjectsShareTheirEvent: a WATCH's protobuf objects decode onto
// the bytes their event carried (an allocation for each slice and map,
// none for its 70 strings) unless CopyStrings is set, and either way the
// events, objects and errors are client-go's watch's, a damaged object
// included.
func TestWatchObjectsShareTheirEvent(t *testing.T) {
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	info, _ := k8sruntime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaTypeProtobuf)
	var body bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&body), info.StreamSerializer.Serializer)
	var raws [][]byte
	for i := range 6 {
		raw, err := k8sruntime.Encode(codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), sharePod(i))
		if err != nil || !bytes.HasPrefix(raw, protobufMagic) {
			t.Fatalf("encode: %q, %v", raw, err)
		}
		raws = append(raws, raw)
		if i == 5 { // a string's length past the end of the Pod
			raw = append([]byte(nil), raw...)
			raw[len(raw)-3] = 0x7f
		}
		if err := enc.Encode(&metav1.WatchEvent{Type: string(watch.Added), Object: k8sruntime.RawExtension{Raw: raw}}); err != nil {
			t.Fatal(err)
		}
	}
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(body.Bytes())))
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer),
		codecs.WithoutConversion().DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion))
	want := collectEvents(watch.NewStreamWatcher(dec, apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")))
	if len(want) != 6 || want[5].Type != watch.Error {
		t.Fatalf("client-go's watch gave %d events, the last %v; want 5 Pods and an ERROR", len(want), want[len(want)-1].Type)
	}
	for _, copyStrings := range []bool{false, true} {
		got := collectEvents(newParallelWatch(context.Background(), io.NopCloser(bytes.NewReader(body.Bytes())), scheme.Scheme, codecs.WithoutConversion(), 2, copyStrings))
		if !equality.Semantic.DeepEqual(got, want) || !reflect.DeepEqual(got[:5], want[:5]) {
			t.Fatalf("copyStrings %v: events differ from client-go's watch:\n got  %v\n want %v", copyStrings, got, want)
		}
	}
	allocs := map[bool]float64{}
	for _, copyStrings := range []bool{false, true} {
		d := objectDecoder{scheme: scheme.Scheme, codec: codecs.WithoutConversion().DecoderToVersion(info.Serializer, nil), copyStrings: copyStrings}
		allocs[copyStrings] = testing.AllocsPerRun(20, func() {
			if _, _, err := d.decode(raws[0]); err != nil {
				t.Fatal(err)
			}
		})
	}
	if allocs[true]-allocs[false] < 40 { // its containers alone hold 60 strings
		t.Errorf("a Pod decodes in %.0f allocations shared, %.0f with copyStrings; want its strings copied only with copyStrings", allocs[false], allocs[true])
	}
}
