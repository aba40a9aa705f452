package reflectortest

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Watcher is a watch.Interface the test feeds. Its result channel is
// unbuffered: Send returns once the code under test has received the event.
type Watcher struct {
	events chan watch.Event

	stopOnce sync.Once
	stopped  chan struct{}
}

var _ watch.Interface = (*Watcher)(nil)

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
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case w.events <- ev:
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

// Close ends the watch as the apiserver does: the result channel closes.
// Call it once, and not concurrently with a send.
func (w *Watcher) Close() { close(w.events) }
