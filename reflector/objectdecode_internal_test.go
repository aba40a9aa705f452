package reflector

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
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
	got := collectEvents(newParallelWatch(context.Background(), io.NopCloser(bytes.NewReader(body.Bytes())), s, codecs.WithoutConversion(), 2, nil))
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
