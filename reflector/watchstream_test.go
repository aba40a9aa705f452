package reflector_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// watchStream builds the body of a WATCH response the way the apiserver
// writes it: each event a metav1.WatchEvent in mediaType's stream framing,
// its object encoded with the version's kind.
type watchStream struct {
	t         *testing.T
	mediaType string
	buf       bytes.Buffer
	events    streaming.Encoder
	objects   k8sruntime.Encoder
}

func newWatchStream(t *testing.T, mediaType string) *watchStream {
	t.Helper()
	info, ok := k8sruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	s := &watchStream{t: t, mediaType: mediaType}
	s.events = streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&s.buf), info.StreamSerializer.Serializer)
	s.objects = scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	return s
}

// event appends an event of type typ carrying obj.
func (s *watchStream) event(typ watch.EventType, obj k8sruntime.Object) {
	s.t.Helper()
	raw, err := k8sruntime.Encode(s.objects, obj)
	if err != nil {
		s.t.Fatal(err)
	}
	s.raw(string(typ), raw)
}

// raw appends an event whose object bytes are raw, whatever they are.
func (s *watchStream) raw(typ string, raw []byte) {
	s.t.Helper()
	if err := s.events.Encode(&metav1.WatchEvent{Type: typ, Object: k8sruntime.RawExtension{Raw: raw}}); err != nil {
		s.t.Fatal(err)
	}
}

// protobufEnvelope returns payload as the apiserver encodes a v1 object of
// kind in protobuf: the magic, then a runtime.Unknown around it.
func protobufEnvelope(t *testing.T, kind string, payload []byte) []byte {
	t.Helper()
	unk := k8sruntime.Unknown{TypeMeta: k8sruntime.TypeMeta{APIVersion: "v1", Kind: kind}, Raw: payload}
	b, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), b...)
}

func (s *watchStream) contentType() string {
	if s.mediaType == "application/vnd.kubernetes.protobuf" {
		return s.mediaType + ";stream=watch"
	}
	return s.mediaType
}

// serveWatch serves body, with contentType, to every WATCH of pods; other
// requests fail the test.
func serveWatch(t *testing.T, contentType string, body []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/pods" || r.URL.Query().Get("watch") != "true" {
			t.Errorf("unexpected request %s", r.URL)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func podsClient(t *testing.T, srv *httptest.Server, protobuf bool) kubernetes.Interface {
	t.Helper()
	cfg := &rest.Config{Host: srv.URL}
	if protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// drain reads w's events until its ResultChan closes.
func drain(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	defer w.Stop()
	var events []watch.Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return events
			}
			events = append(events, e)
		case <-timeout:
			t.Fatalf("watch did not end; %d events so far", len(events))
		}
	}
}

// testPod is pod i of the watch streams: a label, a node and a container.
func testPod(i int) *corev1.Pod {
	return testutil.Pod("ns", fmt.Sprintf("pod-%04d", i), fmt.Sprint(100+i),
		testutil.Label("app", fmt.Sprint(i%7)), testutil.Node(fmt.Sprintf("node-%d", i%13)),
		func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry/image:" + fmt.Sprint(i), Args: []string{"a", fmt.Sprint(i)}}}
		})
}
