package reflector

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// The budget lets events through while they fit, lets one through alone
// whatever its size, and holds the next until bytes are given back.
func TestAheadBudget(t *testing.T) {
	closed := make(chan struct{})
	close(closed)

	b := newAheadBudget(250)
	for i := range 2 {
		if !b.take(100, nil) {
			t.Fatalf("take %d of 100 with 250 allowed: refused", i+1)
		}
	}
	if b.take(100, closed) {
		t.Fatal("a third 100 with 200 of 250 taken: taken, want it to wait (and give up at done)")
	}
	b.give(100)
	if !b.take(100, closed) {
		t.Fatal("100 with 100 of 250 taken: refused")
	}
	if got := b.used.Load(); got != 200 {
		t.Fatalf("used = %d, want 200", got)
	}

	// Over the whole budget: alone, then nothing else.
	big := newAheadBudget(250)
	if !big.take(1000, closed) {
		t.Fatal("an event larger than the budget with nothing ahead: refused")
	}
	if big.take(1, closed) {
		t.Fatal("1 byte behind an event larger than the budget: taken")
	}

	// A waiting take wakes when enough is given back.
	woke := make(chan bool)
	go func() { woke <- b.take(150, nil) }()
	b.give(100)
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("take after give: refused")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("take still waits after enough bytes were given back")
	}
	if got := b.used.Load(); got != 250 {
		t.Fatalf("used = %d, want 250", got)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A watch whose consumer does not read reads at most decodeAheadBytes of
// events ahead (plus the one waiting for room and the reader's buffer),
// however many events its decoders may hold, and then delivers every
// event in order.
func TestParallelWatchReadsAheadAtMostItsByteBudget(t *testing.T) {
	const events, size = 16, 100 << 10
	info, _ := k8sruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaTypeProtobuf)
	var body bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&body), info.StreamSerializer.Serializer)
	for i := range events {
		cm := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Namespace: "ns", ResourceVersion: fmt.Sprint(i + 1)},
			Data:       map[string]string{"blob": strings.Repeat("x", size)},
		}
		var raw bytes.Buffer
		if err := info.Serializer.Encode(cm, &raw); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(&metav1.WatchEvent{Type: string(watch.Added), Object: k8sruntime.RawExtension{Raw: raw.Bytes()}}); err != nil {
			t.Fatal(err)
		}
	}
	frame := int64(body.Len() / events)
	if decodeAheadBytes >= events*frame/2 {
		t.Fatalf("the test needs events that outweigh the budget: %d bytes of events against %d", events*frame, decodeAheadBytes)
	}
	src := &countingReader{r: bytes.NewReader(body.Bytes())}
	// Many workers: their event slots alone would let the whole body in.
	w := newParallelWatch(context.Background(), io.NopCloser(src), scheme.Scheme, scheme.Codecs.WithoutConversion(), 8, false)
	defer w.Stop()

	// Ahead: what fits in the budget, the event that waits for room, and
	// the splitter's read buffer.
	bound := decodeAheadBytes + 2*frame + 64<<10
	deadline := time.Now().Add(10 * time.Second)
	for w.ahead.used.Load() < decodeAheadBytes-frame {
		if time.Now().After(deadline) {
			t.Fatalf("the watch took %d bytes of events ahead after 10s, want about %d", w.ahead.used.Load(), decodeAheadBytes)
		}
		time.Sleep(time.Millisecond)
	}
	// Given time to read on, it must not.
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if read := src.n.Load(); read > bound {
			t.Fatalf("the watch read %d bytes with no event delivered; at most %d may be ahead (budget %d)", read, bound, decodeAheadBytes)
		}
	}

	for i := range events {
		e, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("the watch ended after %d of %d events", i, events)
		}
		cm, isCM := e.Object.(*corev1.ConfigMap)
		if e.Type != watch.Added || !isCM || cm.Name != fmt.Sprintf("cm-%02d", i) || len(cm.Data["blob"]) != size {
			t.Fatalf("event %d: %s %T, want ADDED cm-%02d with its data", i, e.Type, e.Object, i)
		}
		if read, delivered := src.n.Load(), int64(i+1)*frame; read > delivered+bound {
			t.Fatalf("after %d events (%d bytes) the watch had read %d; at most %d may be ahead", i+1, delivered, read, bound)
		}
		if used := w.ahead.used.Load(); used > max(decodeAheadBytes, frame) {
			t.Fatalf("after %d events, %d bytes of events are ahead; the budget is %d", i+1, used, decodeAheadBytes)
		}
	}
	if e, ok := <-w.ResultChan(); ok {
		t.Fatalf("an event after the last: %v", e)
	}
	if got := w.ahead.used.Load(); got != 0 {
		t.Fatalf("%d bytes still counted ahead after every event was delivered", got)
	}
}
