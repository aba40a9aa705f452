package reflector_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/boltinformer/boltinformer/internal/encodedwatch"
	"github.com/boltinformer/boltinformer/reflector"
)

// Every event of a WATCH response reaches ResultChan in order with the same
// type and object as through client-go's own watch, in protobuf and in JSON,
// and a damaged stream ends the same way: quietly when cut short, with the
// same ERROR event when an event does not decode.
func TestListWatchMatchesClientGoWatch(t *testing.T) {
	procs := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(procs)

	tail := map[string]func(s *watchStream){
		"ends cleanly": func(*watchStream) {},
		"object that does not decode": func(s *watchStream) {
			if s.mediaType == "application/json" {
				s.raw("ADDED", []byte(`{"kind":"Pod","apiVersion":"v1","spec":"not an object"}`))
			} else {
				s.raw("ADDED", []byte("k8s\x00garbage"))
			}
			s.event(watch.Added, testPod(9999))
		},
		"payload that does not decode": func(s *watchStream) {
			if s.mediaType == "application/json" {
				s.raw("ADDED", []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":7}}`))
			} else {
				s.raw("ADDED", protobufEnvelope(s.t, "Pod", []byte("\x0a\xff\xff")))
			}
			s.event(watch.Added, testPod(9999))
		},
		"kind the scheme does not know": func(s *watchStream) {
			if s.mediaType == "application/json" {
				s.raw("ADDED", []byte(`{"kind":"Widget","apiVersion":"v1"}`))
			} else {
				s.raw("ADDED", protobufEnvelope(s.t, "Widget", []byte("\x0a\x00")))
			}
			s.event(watch.Added, testPod(9999))
		},
		"frame that is not a watch event": func(s *watchStream) {
			// Only JSON frames say their kind; a protobuf frame is read as
			// a watch event whatever it holds.
			if s.mediaType == "application/json" {
				s.buf.WriteString(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"}}` + "\n")
			}
			s.event(watch.Added, testPod(9999))
		},
		"invalid event type": func(s *watchStream) { s.event("BOGUS", testPod(9998)); s.event(watch.Added, testPod(9999)) },
		"cut short":          func(s *watchStream) { s.event(watch.Added, testPod(9999)); s.buf.Truncate(s.buf.Len() - 10) },
		"error event then more events": func(s *watchStream) {
			s.event(watch.Error, &apierrors.NewResourceExpired("too old").ErrStatus)
			s.event(watch.Added, testPod(9999))
		},
	}
	for _, mediaType := range []string{"application/vnd.kubernetes.protobuf", "application/json"} {
		for name, addTail := range tail {
			t.Run(mediaType+"/"+name, func(t *testing.T) {
				s := newWatchStream(t, mediaType)
				for i := range 300 {
					switch i % 10 {
					case 7:
						s.event(watch.Modified, testPod(i-1))
					case 8:
						s.event(watch.Deleted, testPod(i-2))
					case 9:
						s.event(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: fmt.Sprint(1000 + i)}})
					default:
						s.event(watch.Added, testPod(i))
					}
				}
				addTail(s)
				protobuf := strings.Contains(mediaType, "protobuf")
				srv := serveWatch(t, s.contentType(), s.buf.Bytes())
				cs := podsClient(t, srv, protobuf)
				ctx := context.Background()

				want, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				lw := reflector.NewListWatch(cs.CoreV1().RESTClient(), "pods", scheme.Scheme,
					reflector.ListWatchOptions{PreferProtobuf: protobuf})
				got, err := lw.WatchWithContext(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				wantEvents, gotEvents := drain(t, want), drain(t, got)
				if len(wantEvents) < 300 {
					t.Fatalf("client-go's watch gave %d events, want at least 300", len(wantEvents))
				}
				if len(gotEvents) != len(wantEvents) {
					t.Fatalf("got %d events, client-go's watch %d", len(gotEvents), len(wantEvents))
				}
				for i := range wantEvents {
					if gotEvents[i].Type != wantEvents[i].Type || !apiequality.Semantic.DeepEqual(gotEvents[i].Object, wantEvents[i].Object) {
						t.Fatalf("event %d: got %s %#v, client-go's watch %s %#v", i,
							gotEvents[i].Type, gotEvents[i].Object, wantEvents[i].Type, wantEvents[i].Object)
					}
				}
			})
		}
	}
}

// A response in neither format ends the watch with an ERROR event that names
// the format, and a refused WATCH is the apiserver's Status as an error, even
// when its message reads like a dropped connection (as client-go's Watch,
// which returns an empty watch only for an error of the HTTP client).
func TestListWatchBadResponses(t *testing.T) {
	srv := serveWatch(t, "application/cbor", []byte("\xd9\xd9\xf7\xa2garbage that is not protobuf"))
	cs := podsClient(t, srv, true)
	lw := reflector.NewListWatch(cs.CoreV1().RESTClient(), "pods", scheme.Scheme, reflector.ListWatchOptions{PreferProtobuf: true})
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	events := drain(t, w)
	if len(events) != 1 || events[0].Type != watch.Error {
		t.Fatalf("got %v, want one ERROR event", events)
	}
	if msg := apierrors.FromObject(events[0].Object).Error(); !strings.Contains(msg, reflector.ErrWatchFormat.Error()) {
		t.Errorf("ERROR event says %q, want it to name the format", msg)
	}

	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGatewayTimeout)
		st := apierrors.NewTimeoutError("Too large resource version", 1).ErrStatus
		st.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
		b, _ := k8sruntime.Encode(scheme.Codecs.LegacyCodec(metav1.SchemeGroupVersion), &st)
		w.Write(b)
	}))
	defer refused.Close()
	cs = podsClient(t, refused, false)
	lw = reflector.NewListWatch(cs.CoreV1().RESTClient(), "pods", scheme.Scheme, reflector.ListWatchOptions{})
	_, err = lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "999999"})
	if !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Errorf("got %v, want the Status with its ResourceVersionTooLarge cause", err)
	}

	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		st := apierrors.NewServiceUnavailable("error trying to reach service: read tcp 10.0.0.1:41234->10.96.0.5:443: read: connection reset by peer").ErrStatus
		b, _ := k8sruntime.Encode(scheme.Codecs.LegacyCodec(metav1.SchemeGroupVersion), &st)
		w.Write(b)
	}))
	defer proxy.Close()
	cs = podsClient(t, proxy, false)
	if _, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{}); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("client-go's Watch: got %v, want the 503 Status", err)
	}
	lw = reflector.NewListWatch(cs.CoreV1().RESTClient(), "pods", scheme.Scheme, reflector.ListWatchOptions{})
	w, err = lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err == nil {
		w.Stop()
	}
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("a 503 whose message mentions a reset connection: got watch %T and error %v, want the Status", w, err)
	}
}

// Stop in the middle of a stream, with workers busy and events not yet
// received, returns once every goroutine of the watch has ended, and so does
// a watch whose response never sends anything.
func TestListWatchStop(t *testing.T) {
	procs := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(procs)

	s := newWatchStream(t, "application/vnd.kubernetes.protobuf")
	for i := range 500 {
		s.event(watch.Added, testPod(i))
	}
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", s.contentType())
		w.WriteHeader(http.StatusOK)
		if r.URL.Query().Get("resourceVersion") == "idle" {
			w.(http.Flusher).Flush()
		} else {
			w.Write(s.buf.Bytes())
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer once.Do(func() { close(release) })
	cs := podsClient(t, srv, true)
	lw := reflector.NewListWatch(cs.CoreV1().RESTClient(), "pods", scheme.Scheme, reflector.ListWatchOptions{PreferProtobuf: true})

	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		e := <-w.ResultChan()
		if pod, ok := e.Object.(*corev1.Pod); !ok || pod.Name != testPod(i).Name {
			t.Fatalf("event %d: %s %#v", i, e.Type, e.Object)
		}
	}
	w.Stop()
	for range w.ResultChan() {
	}

	idle, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "idle"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-idle.ResultChan():
		t.Fatalf("idle watch gave %v", e)
	case <-time.After(50 * time.Millisecond):
	}
	idle.Stop()
	if _, ok := <-idle.ResultChan(); ok {
		t.Fatal("ResultChan still open after Stop")
	}
	once.Do(func() { close(release) })
}

// ListWithContext makes the LIST a generated client makes, tweaked.
func TestListWatchList(t *testing.T) {
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Path + "?" + r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		b, _ := k8sruntime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion),
			&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Pod{*testPod(1)}})
		w.Write(b)
	}))
	defer srv.Close()
	cs := podsClient(t, srv, false)
	lw := reflector.NewListWatch(cs.CoreV1().RESTClient(), "pods", scheme.Scheme, reflector.ListWatchOptions{
		Namespace:        "ns",
		TweakListOptions: func(o *metav1.ListOptions) { o.LabelSelector = "app=1" },
	})
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	list, ok := obj.(*corev1.PodList)
	if !ok || list.ResourceVersion != "7" || len(list.Items) != 1 || list.Items[0].Name != "pod-0001" {
		t.Fatalf("got %#v", obj)
	}
	if want := "/api/v1/namespaces/ns/pods?labelSelector=app%3D1&limit=50"; query != want {
		t.Errorf("LIST %s, want %s", query, want)
	}
}

// A watch of a ListWatch is an encodedwatch.Interface. Through
// EncodedResultChan each ADDED or MODIFIED object of a protobuf watch comes
// with the bytes it was decoded from, the object's protobuf encoding; other
// events, and every event of a JSON watch, come without. The events are
// those ResultChan gives. Once ResultChan is chosen, EncodedResultChan gives
// nothing and closes with the watch.
func TestListWatchEncodedEvents(t *testing.T) {
	for _, mediaType := range []string{"application/vnd.kubernetes.protobuf", "application/json"} {
		t.Run(mediaType, func(t *testing.T) {
			protobuf := strings.Contains(mediaType, "protobuf")
			s := newWatchStream(t, mediaType)
			s.event(watch.Added, testPod(1))
			s.event(watch.Modified, testPod(2))
			s.event(watch.Deleted, testPod(3))
			s.event(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "500"}})
			srv := serveWatch(t, s.contentType(), s.buf.Bytes())
			lw := reflector.NewListWatch(podsClient(t, srv, protobuf).CoreV1().RESTClient(), "pods", scheme.Scheme,
				reflector.ListWatchOptions{PreferProtobuf: protobuf})
			open := func() encodedwatch.Interface {
				t.Helper()
				w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ew, ok := w.(encodedwatch.Interface)
				if !ok {
					t.Fatalf("the watch is a %T, not an encodedwatch.Interface", w)
				}
				return ew
			}

			plain := open()
			want := drain(t, plain)
			if e, ok := <-plain.EncodedResultChan(); ok {
				t.Errorf("EncodedResultChan after ResultChan gave %v, want it closed", e)
			}

			w := open()
			defer w.Stop()
			var events []encodedwatch.Event
			timeout := time.After(30 * time.Second)
			for done := false; !done; {
				select {
				case e, ok := <-w.EncodedResultChan():
					events = append(events, e)
					done = !ok
				case <-timeout:
					t.Fatalf("watch did not end; %d events so far", len(events))
				}
			}
			events = events[:len(events)-1]
			if len(events) != len(want) {
				t.Fatalf("EncodedResultChan gave %d events, ResultChan %d", len(events), len(want))
			}
			for i, e := range events {
				if e.Type != want[i].Type || !apiequality.Semantic.DeepEqual(e.Object, want[i].Object) {
					t.Errorf("event %d: EncodedResultChan gave %s %v, ResultChan %s %v", i, e.Type, e.Object, want[i].Type, want[i].Object)
				}
				wantEncoded := protobuf && (e.Type == watch.Added || e.Type == watch.Modified)
				if (e.Encoded != nil) != wantEncoded {
					t.Fatalf("%s event: encoding %v, want one: %v", e.Type, e.Encoded != nil, wantEncoded)
				}
				if e.Encoded == nil {
					continue
				}
				b, err := e.Object.(*corev1.Pod).Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(e.Encoded, b) {
					t.Errorf("%s event: its encoding is not the object's protobuf encoding", e.Type)
				}
			}
		})
	}
}
