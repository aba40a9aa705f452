package reflector

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// waitLimit bounds every wait of these tests; none should come near it.
const waitLimit = 10 * time.Second

// protobufFrames encodes watch events as the apiserver frames them in
// protobuf, each alone, so that a test can write them one at a time.
type protobufFrames struct {
	t       *testing.T
	objects k8sruntime.Encoder
	info    k8sruntime.SerializerInfo
}

func newProtobufFrames(t *testing.T) *protobufFrames {
	info, ok := k8sruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	return &protobufFrames{t: t, info: info, objects: scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)}
}

// frame returns the frame of an event of type typ whose object bytes are
// raw.
func (f *protobufFrames) frame(typ watch.EventType, raw []byte) []byte {
	f.t.Helper()
	var b bytes.Buffer
	enc := streaming.NewEncoder(f.info.StreamSerializer.Framer.NewFrameWriter(&b), f.info.StreamSerializer.Serializer)
	if err := enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: k8sruntime.RawExtension{Raw: raw}}); err != nil {
		f.t.Fatal(err)
	}
	return b.Bytes()
}

// configMap returns the frame of an event of type typ carrying ConfigMap name,
// with pad bytes of data, and the object's protobuf payload.
func (f *protobufFrames) configMap(typ watch.EventType, name string, pad int) ([]byte, []byte) {
	f.t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "1"},
		Data:       map[string]string{"pad": strings.Repeat("x", pad)},
	}
	raw, err := k8sruntime.Encode(f.objects, cm)
	if err != nil {
		f.t.Fatal(err)
	}
	env, ok := openEnvelope(raw)
	if !ok {
		f.t.Fatal("the encoded ConfigMap has no protobuf envelope")
	}
	return f.frame(typ, raw), env.payload
}

// write writes b to the body, failing the test if no one reads it in time.
func write(t *testing.T, body *io.PipeWriter, b []byte) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := body.Write(b)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("writing the body: %v", err)
		}
	case <-time.After(waitLimit):
		body.CloseWithError(fmt.Errorf("the test gave up writing"))
		t.Fatalf("the watch did not read %d bytes of body within %v", len(b), waitLimit)
	}
}

// next receives the next event, failing the test if none comes in time.
func next[E any](t *testing.T, events <-chan E) (E, bool) {
	t.Helper()
	select {
	case e, ok := <-events:
		return e, ok
	case <-time.After(waitLimit):
		t.Fatalf("no event within %v", waitLimit)
		panic("unreachable")
	}
}

// A trickle of small protobuf events, each written after the one before
// was received, never waits for a decoder: each arrives with its encoding
// (none for a DELETED one), in order, even with no decode worker at all.
func TestParallelWatchTrickleNeedsNoDecoder(t *testing.T) {
	f := newProtobufFrames(t)
	r, body := io.Pipe()
	w := newParallelWatch(testutil.Context(t), r, scheme.Scheme, scheme.Codecs.WithoutConversion(), 0, false)
	defer w.Stop()
	events := w.EncodedResultChan()
	types := []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Modified}
	for i, typ := range types {
		frame, payload := f.configMap(typ, fmt.Sprint("cm-", i), 100)
		write(t, body, frame)
		e, ok := next(t, events)
		if !ok {
			t.Fatalf("the watch ended before event %d", i)
		}
		cm, isCM := e.Object.(*corev1.ConfigMap)
		if e.Type != typ || !isCM || cm.Name != fmt.Sprint("cm-", i) {
			t.Fatalf("event %d: %s %T, want %s cm-%d", i, e.Type, e.Object, typ, i)
		}
		wantEncoded := payload
		if typ == watch.Deleted {
			wantEncoded = nil
		}
		if !bytes.Equal(e.Encoded, wantEncoded) {
			t.Fatalf("event %d (%s): encoded %d bytes, want %d", i, typ, len(e.Encoded), len(wantEncoded))
		}
	}
	body.Close()
	if e, ok := next(t, events); ok {
		t.Fatalf("an event after the body ended: %v", e)
	}
}

// Events come out in the body's order however they arrive: alone, in a
// burst, small or larger than a frame the splitter decodes itself.
func TestParallelWatchOrderUnderTrickleAndBurst(t *testing.T) {
	f := newProtobufFrames(t)
	r, body := io.Pipe()
	w := newParallelWatch(testutil.Context(t), r, scheme.Scheme, scheme.Codecs.WithoutConversion(), 2, false)
	defer w.Stop()
	events := w.ResultChan()

	// Pads: small, then one over what the splitter decodes itself.
	pads := []int{10, inlineObjectBytes * 2, 10, 200, inlineObjectBytes * 3, 10}
	n := 0
	expect := func(count int) {
		t.Helper()
		for range count {
			e, ok := next(t, events)
			if !ok {
				t.Fatalf("the watch ended before event %d", n)
			}
			cm, isCM := e.Object.(*corev1.ConfigMap)
			if !isCM || cm.Name != fmt.Sprint("cm-", n) || len(cm.Data["pad"]) != pads[n%len(pads)] {
				t.Fatalf("event %d: %T %v, want cm-%d with %d bytes of data", n, e.Object, e.Object, n, pads[n%len(pads)])
			}
			n++
		}
	}
	frameOf := func(i int) []byte {
		frame, _ := f.configMap(watch.Modified, fmt.Sprint("cm-", i), pads[i%len(pads)])
		return frame
	}
	for round := range 3 {
		// A trickle: each event alone.
		for range len(pads) {
			write(t, body, frameOf(n))
			expect(1)
		}
		// A burst, written while the watch may be sending the first.
		var burst []byte
		for i := range 4 * len(pads) {
			burst = append(burst, frameOf(n+i)...)
		}
		go func() { _, _ = body.Write(burst) }()
		expect(4 * len(pads))
		t.Logf("round %d: %d events in order", round, n)
	}
	body.Close()
	if e, ok := next(t, events); ok {
		t.Fatalf("an event after the body ended: %v", e)
	}
}

// An object that does not decode, arriving alone after good ones, ends
// the watch with client-go's ERROR event; nothing after it is delivered.
func TestParallelWatchTrickleEndsAtUndecodableObject(t *testing.T) {
	f := newProtobufFrames(t)
	r, body := io.Pipe()
	w := newParallelWatch(testutil.Context(t), r, scheme.Scheme, scheme.Codecs.WithoutConversion(), 0, false)
	defer w.Stop()
	events := w.ResultChan()

	good, _ := f.configMap(watch.Added, "cm-0", 10)
	write(t, body, good)
	if e, ok := next(t, events); !ok || e.Type != watch.Added {
		t.Fatalf("first event: %v (open %v), want the ADDED ConfigMap", e, ok)
	}
	// A ConfigMap envelope whose payload is not a ConfigMap.
	unk := k8sruntime.Unknown{TypeMeta: k8sruntime.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Raw: []byte{0xff, 0xff, 0xff}}
	payload, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	write(t, body, f.frame(watch.Modified, append([]byte("k8s\x00"), payload...)))
	// The body stays open: the watch ends on its own.
	go func() {
		after, _ := f.configMap(watch.Added, "cm-after", 10)
		_, _ = body.Write(after)
	}()

	e, ok := next(t, events)
	if !ok || e.Type != watch.Error {
		t.Fatalf("after the bad object: %v (open %v), want an ERROR event", e, ok)
	}
	status, isStatus := e.Object.(*metav1.Status)
	if !isStatus || status.Code != 500 || status.Reason != metav1.StatusReasonInternalError || !hasCause(status, "ClientWatchDecoding", "unable to decode watch event") {
		t.Fatalf("ERROR event: %#v, want a 500 ClientWatchDecoding status saying the event did not decode", e.Object)
	}
	if e, ok := next(t, events); ok {
		t.Fatalf("an event after the ERROR: %v", e)
	}
}

// hasCause reports whether status has a cause of type typ whose message
// contains msg.
func hasCause(status *metav1.Status, typ metav1.CauseType, msg string) bool {
	if status.Details == nil {
		return false
	}
	for _, c := range status.Details.Causes {
		if c.Type == typ && strings.Contains(c.Message, msg) {
			return true
		}
	}
	return false
}

// Stop returns, and the result channel closes, while the watch holds an
// event that arrived alone and that no one receives.
func TestParallelWatchStopWithTrickleEventUnreceived(t *testing.T) {
	f := newProtobufFrames(t)
	r, body := io.Pipe()
	defer body.Close()
	w := newParallelWatch(testutil.Context(t), r, scheme.Scheme, scheme.Codecs.WithoutConversion(), 0, false)
	events := w.ResultChan()

	for i := range 2 {
		frame, _ := f.configMap(watch.Added, fmt.Sprint("cm-", i), 10)
		write(t, body, frame)
		if i == 0 {
			if _, ok := next(t, events); !ok {
				t.Fatal("the watch ended before the first event")
			}
		}
	}
	stopped := make(chan struct{})
	go func() {
		w.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(waitLimit):
		t.Fatalf("Stop did not return within %v with an event unreceived", waitLimit)
	}
	// The held event may or may not come out; then the channel closes.
	for {
		if _, ok := next(t, events); !ok {
			break
		}
	}
}

// BenchmarkParallelWatchTrickle measures one Pod event written to the body
// after the one before was received: the steady churn of an informer, back
// to back and paced (the process idle between events, as at a low rate).
// cpu-ns/op is the process's CPU time per event, every goroutine's.
func BenchmarkParallelWatchTrickle(b *testing.B) {
	info, _ := k8sruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaTypeProtobuf)
	objects := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1", Labels: map[string]string{"app": "a"}},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "registry.example/image:1"}}},
	}
	raw, err := k8sruntime.Encode(objects, pod)
	if err != nil {
		b.Fatal(err)
	}
	var frame bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&frame), info.StreamSerializer.Serializer)
	if err := enc.Encode(&metav1.WatchEvent{Type: string(watch.Modified), Object: k8sruntime.RawExtension{Raw: raw}}); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		gap  time.Duration
	}{{"back-to-back", 0}, {"paced", time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			r, body := io.Pipe()
			w := newParallelWatch(testutil.Context(b), r, scheme.Scheme, scheme.Codecs.WithoutConversion(), decodeWorkers(), false)
			defer w.Stop()
			defer body.Close()
			events := w.ResultChan()
			b.ReportAllocs()
			cpu := processCPU(b)
			for b.Loop() {
				if _, err := body.Write(frame.Bytes()); err != nil {
					b.Fatal(err)
				}
				if _, ok := <-events; !ok {
					b.Fatal("the watch ended")
				}
				if bc.gap > 0 {
					time.Sleep(bc.gap)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
