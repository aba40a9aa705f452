package boltinformer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/protobuf/encoding/protowire"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// markedPodsServer is an apiserver for the Pods of namespace ns whose
// objects carry a marker no Go type knows: a protobuf field (number 1000)
// in the WATCH's protobuf Pods, a JSON field in the LIST's JSON ones.
// Decoding drops it, so a cache file holds a Pod's marker only if the
// store wrote the bytes the Pod was received in.
//
// Its first WATCH sends events; later ones send nothing until they are
// stopped. A WatchList WATCH (sendInitialEvents) first sends the initial
// ADDED events and the bookmark that ends them, at RV 20; a plain one
// starts after them. The LIST holds one Pod at RV 10.
type markedPodsServer struct {
	t       *testing.T
	initial []*v1.Pod
	events  []watch.Event
	listed  *v1.Pod
	watches atomic.Int32
}

// marker is what the server marks pod with.
func marker(pod *v1.Pod) string { return "received-as-sent:" + pod.Name + "@" + pod.ResourceVersion }

func (s *markedPodsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/ns/pods" {
		s.t.Errorf("unexpected request %s", r.URL)
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("watch") != "true" {
		s.serveList(w)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
	w.WriteHeader(http.StatusOK)
	if s.watches.Add(1) == 1 {
		info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), "application/vnd.kubernetes.protobuf")
		enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(w), info.StreamSerializer.Serializer)
		send := func(typ watch.EventType, pod *v1.Pod) {
			raw := s.envelope(pod)
			if err := enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}}); err != nil {
				s.t.Errorf("write a watch event: %v", err)
			}
		}
		if r.URL.Query().Get("sendInitialEvents") == "true" {
			for _, pod := range s.initial {
				send(watch.Added, pod)
			}
			send(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{
				ResourceVersion: "20", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"},
			}})
		}
		for _, e := range s.events {
			send(e.Type, e.Object.(*v1.Pod))
		}
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// envelope encodes pod as the apiserver does in a protobuf WATCH, its
// marker added.
func (s *markedPodsServer) envelope(pod *v1.Pod) []byte {
	b, err := pod.Marshal()
	if err != nil {
		s.t.Fatal(err)
	}
	b = protowire.AppendTag(b, 1000, protowire.BytesType)
	b = protowire.AppendString(b, marker(pod))
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: b}
	env, err := unk.Marshal()
	if err != nil {
		s.t.Fatal(err)
	}
	return append([]byte("k8s\x00"), env...)
}

// serveList answers a LIST in JSON, its Pod marked.
func (s *markedPodsServer) serveList(w http.ResponseWriter) {
	var item map[string]any
	b, err := json.Marshal(s.listed)
	if err == nil {
		err = json.Unmarshal(b, &item)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	item["marker"] = marker(s.listed)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"apiVersion": "v1", "kind": "PodList", "metadata": map[string]any{"resourceVersion": "10"}, "items": []any{item},
	})
}

// The store writes each object as the apiserver sent it in a protobuf
// WATCH, through the queue and the process loop: the initial events of a
// WatchList relist and the watch events after them. An object received
// without those bytes (a LIST's, in JSON) is encoded by the store, and so
// is every object when a transform may have changed it.
func TestStoreWritesTheBytesReceived(t *testing.T) {
	initial := []*v1.Pod{testutil.Pod("ns", "a", "11"), testutil.Pod("ns", "b", "12")}
	events := []watch.Event{
		{Type: watch.Modified, Object: testutil.Pod("ns", "a", "21")},
		{Type: watch.Added, Object: testutil.Pod("ns", "c", "22")},
	}
	listed := testutil.Pod("ns", "l", "9")
	received := func(pods ...*v1.Pod) []string {
		var m []string
		for _, p := range pods {
			m = append(m, marker(p))
		}
		return m
	}
	// What the store ends with: b from the initial events, a and c from the
	// watch events after them, and the listed l, which only a LIST gives.
	stored := []*v1.Pod{initial[1], events[0].Object.(*v1.Pod), events[1].Object.(*v1.Pod), listed}
	for _, tc := range []struct {
		name      string
		watchList reflector.WatchListMode
		transform bool
		want      []string // the markers of stored the file holds
	}{
		{"watch-list", reflector.WatchListOn, false, received(stored[:3]...)},
		{"list then watch", reflector.WatchListOff, false, received(stored[1:3]...)},
		{"transform", reflector.WatchListOn, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&markedPodsServer{t: t, initial: initial, events: events, listed: listed})
			defer srv.Close()
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			lw := reflector.NewListWatch(cs.CoreV1().RESTClient(), "pods", scheme.Scheme,
				reflector.ListWatchOptions{Namespace: "ns", PreferProtobuf: true})

			path := filepath.Join(t.TempDir(), "cache.db")
			c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: testr.New(t)})
			if err != nil {
				t.Fatal(err)
			}
			inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{WatchList: tc.watchList})
			if err != nil {
				t.Fatal(err)
			}
			if tc.transform {
				if err := inf.SetTransform(func(obj any) (any, error) { return obj, nil }); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(testutil.Context(t))
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }()
			testutil.Eventually(t, "the watch events to be stored", 30*time.Second, func() bool {
				obj, ok, err := inf.GetIndexer().GetByKey("ns/c")
				return err == nil && ok && obj.(*v1.Pod).ResourceVersion == "22"
			})
			cancel()
			<-done
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if got := testutil.FileHolds(t, path, received(stored...)...); !slices.Equal(got, tc.want) {
				t.Errorf("the file holds the markers %q, want %q", got, tc.want)
			}
		})
	}
}
