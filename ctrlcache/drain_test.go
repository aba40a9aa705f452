package ctrlcache

import (
	"testing"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestStoppedWatchIsDrained: a watch controller-runtime filters (metadata
// informers) that is stopped with an event in flight leaves no goroutine
// behind.
func TestStoppedWatchIsDrained(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fake := watch.NewFake()
	w, _ := drained(watch.Filter(fake, func(e watch.Event) (watch.Event, bool) { return e, true }), nil)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		fake.Add(&v1.ConfigMap{}) // returns once the filter holds the event
	}()
	<-sent
	w.Stop()
}
