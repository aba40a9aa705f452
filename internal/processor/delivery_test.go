package processor

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// TestSlowHandlerDoesNotBlockOthers: a handler stuck in its first call holds
// up neither Distribute nor another handler; its notifications wait in its
// own queue and arrive in order once it is unblocked.
func TestSlowHandlerDoesNotBlockOthers(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	unblock := make(chan struct{})
	slow := &recorder{hook: func(event) { <-unblock }}
	fast := &recorder{}
	ls := addListener(t, p, slow, ListenerOptions{})
	addListener(t, p, fast, ListenerOptions{})
	runProcessor(t, p)
	t.Cleanup(func() { closeOnce(unblock) })

	const n = 50
	var want []event
	distributed := make(chan struct{})
	go func() {
		defer close(distributed)
		for i := range n {
			note := Add{Obj: i}
			want = append(want, notificationEvent(note))
			p.Distribute(note)
		}
	}()
	select {
	case <-distributed:
	case <-time.After(10 * time.Second):
		t.Fatal("Distribute blocked on a slow handler")
	}
	testutil.Eventually(t, "the fast handler to get every notification", waitTimeout, func() bool { return fast.Len() == n })
	if got := fast.Events(); !reflect.DeepEqual(got, want) {
		t.Fatalf("fast handler got %v, want %v", got, want)
	}
	if got := slow.Len(); got != 0 {
		t.Fatalf("slow handler recorded %d events while blocked", got)
	}
	// One call in progress, the rest queued.
	if got := ls.Len(); got != n-1 {
		t.Fatalf("slow listener Len() = %d, want %d", got, n-1)
	}

	close(unblock)
	testutil.Eventually(t, "the slow handler to catch up", waitTimeout, func() bool { return slow.Len() == n })
	if got := slow.Events(); !reflect.DeepEqual(got, want) {
		t.Fatalf("slow handler got %v, want %v", got, want)
	}
	if got := ls.Len(); got != 0 {
		t.Fatalf("Len() = %d after catching up, want 0", got)
	}
}

// TestOrderPreservedPerHandler: handlers of different speeds each see every
// notification exactly once, in Distribute order.
func TestOrderPreservedPerHandler(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	var recs []*recorder
	for i := range 4 {
		rng := rand.New(rand.NewSource(int64(i)))
		recs = append(recs, &recorder{hook: func(event) {
			if i > 0 && rng.Intn(20) == 0 {
				time.Sleep(time.Duration(rng.Intn(200*i)) * time.Microsecond)
			}
		}})
		addListener(t, p, recs[i], ListenerOptions{})
	}
	runProcessor(t, p)

	const n = 3000
	want := make([]event, 0, n)
	for i := range n {
		var note Notification
		switch i % 3 {
		case 0:
			note = Add{Obj: i}
		case 1:
			note = Update{Old: i - 1, New: i}
		default:
			note = Delete{Obj: i}
		}
		want = append(want, notificationEvent(note))
		p.Distribute(note)
	}
	for i, r := range recs {
		testutil.Eventually(t, fmt.Sprintf("handler %d to get %d notifications", i, n), waitTimeout, func() bool { return r.Len() >= n })
		if got := r.Events(); !reflect.DeepEqual(got, want) {
			t.Fatalf("handler %d: order or content differs: first difference at %d", i, firstDifference(got, want))
		}
	}
}

// TestRingBufferGrowth: a handler blocked while 100k notifications arrive
// gets all of them, in order, once it runs; the queue grew far beyond its
// initial size without blocking Distribute.
func TestRingBufferGrowth(t *testing.T) {
	p := New(Options{Logger: testLogger(t)})
	unblock := make(chan struct{})
	// Counted in the hook: a recorder would keep 100k events.
	var delivered, outOfOrder int
	h := &recorder{hook: func(e event) {
		<-unblock
		if e.obj != delivered {
			outOfOrder++
		}
		delivered++
	}}
	l := addListener(t, p, h, ListenerOptions{})
	stop := runProcessor(t, p)
	t.Cleanup(func() { closeOnce(unblock) })

	const n = 100_000
	for i := range n {
		p.Distribute(Add{Obj: i})
	}
	if got := l.Len(); got != n-1 {
		t.Fatalf("Len() = %d while blocked, want %d", got, n-1)
	}
	close(unblock)
	testutil.Eventually(t, "the backlog to drain", waitTimeout, func() bool { return l.Len() == 0 })
	// Len reaches 0 when the last call starts; Run returns after it ended.
	stop()
	if delivered != n || outOfOrder != 0 {
		t.Fatalf("delivered %d notifications, %d out of order; want %d in order", delivered, outOfOrder, n)
	}
	// The ring never shrinks; read it only now that pop has exited.
	if got := l.pending.Cap(); got < n-2 {
		t.Fatalf("ring buffer capacity %d, want at least %d", got, n-2)
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func firstDifference(a, b []event) int {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return i
		}
	}
	return min(len(a), len(b))
}
