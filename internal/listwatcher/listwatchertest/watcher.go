package listwatchertest

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/boltinformer/boltinformer/internal/encodedwatch"
)

// Watcher is a watch.Interface the test feeds. Its result channel is
// unbuffered: Send returns once the code under test has received the event.
type Watcher struct {
	events chan watch.Event
	// encoded, set for an EncodedWatcher, carries the events instead of
	// events.
	encoded chan encodedwatch.Event

	stopOnce sync.Once
	stopped  chan struct{}
}

var _ watch.Interface = (*Watcher)(nil)

// EncodedWatcher is a Watcher whose events carry the encodings of their
// objects, as a watch of a ListWatch does: an encodedwatch.Interface. Its
// events go to EncodedResultChan; ResultChan gives nothing.
type EncodedWatcher struct {
	*Watcher
}

var _ encodedwatch.Interface = EncodedWatcher{}

// NewEncodedWatcher returns an open EncodedWatcher.
func NewEncodedWatcher() EncodedWatcher {
	w := NewWatcher()
	w.encoded = make(chan encodedwatch.Event)
	return EncodedWatcher{w}
}

// EncodedResultChan implements encodedwatch.Interface.
func (w EncodedWatcher) EncodedResultChan() <-chan encodedwatch.Event { return w.encoded }

// SendEncoded delivers ev with encoded within Timeout and reports whether
// it was delivered.
func (w EncodedWatcher) SendEncoded(ev watch.Event, encoded []byte) bool {
	return w.trySend(ev, encoded, Timeout)
}

// NewWatcher returns an open Watcher.
func NewWatcher() *Watcher {
	return &Watcher{events: make(chan watch.Event), stopped: make(chan struct{})}
}

// ResultChan implements watch.Interface.
func (w *Watcher) ResultChan() <-chan watch.Event { return w.events }

// Stop implements watch.Interface. It does not close the result channel; the
// test may Close it.
func (w *Watcher) Stop() { w.stopOnce.Do(func() { close(w.stopped) }) }

// Stopped is closed once the code under test has called Stop.
func (w *Watcher) Stopped() <-chan struct{} { return w.stopped }

// IsStopped reports whether Stop was called.
func (w *Watcher) IsStopped() bool {
	select {
	case <-w.stopped:
		return true
	default:
		return false
	}
}

// TrySend delivers ev unless the watcher is stopped or nobody receives it
// within d, and reports whether it was delivered.
func (w *Watcher) TrySend(ev watch.Event, d time.Duration) bool {
	return w.trySend(ev, nil, d)
}

// trySend delivers ev, with encoded to an EncodedWatcher, unless the
// watcher is stopped or nobody receives it within d.
func (w *Watcher) trySend(ev watch.Event, encoded []byte, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	events := w.events
	var withEncoding chan encodedwatch.Event
	if w.encoded != nil {
		events, withEncoding = nil, w.encoded
	}
	select {
	case events <- ev:
		return true
	case withEncoding <- encodedwatch.Event{Event: ev, Encoded: encoded}:
		return true
	case <-w.stopped:
		return false
	case <-t.C:
		return false
	}
}

// Send delivers ev within Timeout and reports whether it was delivered.
func (w *Watcher) Send(ev watch.Event) bool { return w.TrySend(ev, Timeout) }

// Add sends an ADDED event.
func (w *Watcher) Add(obj runtime.Object) bool {
	return w.Send(watch.Event{Type: watch.Added, Object: obj})
}

// Modify sends a MODIFIED event.
func (w *Watcher) Modify(obj runtime.Object) bool {
	return w.Send(watch.Event{Type: watch.Modified, Object: obj})
}

// Delete sends a DELETED event.
func (w *Watcher) Delete(obj runtime.Object) bool {
	return w.Send(watch.Event{Type: watch.Deleted, Object: obj})
}

// Bookmark sends a BOOKMARK event.
func (w *Watcher) Bookmark(obj runtime.Object) bool {
	return w.Send(watch.Event{Type: watch.Bookmark, Object: obj})
}

// Error sends an ERROR event carrying status, as the apiserver does.
func (w *Watcher) Error(status metav1.Status) bool {
	return w.Send(watch.Event{Type: watch.Error, Object: &status})
}

// Close ends the watch as the apiserver does: the result channels close.
// Call it once, and not concurrently with a send.
func (w *Watcher) Close() {
	close(w.events)
	if w.encoded != nil {
		close(w.encoded)
	}
}
