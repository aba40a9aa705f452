package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// recordingLW is a ListerWatcher on the apiserver that records the options
// of every LIST and WATCH its informer makes.
type recordingLW struct {
	lw *cache.ListWatch

	mu      sync.Mutex
	calls   []call
	watches atomic.Int32
}

// call is one request of a recordingLW.
type call struct {
	verb string // "LIST" or "WATCH"
	opts metav1.ListOptions
}

func (c call) String() string {
	s := fmt.Sprintf("%s rv=%q", c.verb, c.opts.ResourceVersion)
	if c.opts.ResourceVersionMatch != "" {
		s += " match=" + string(c.opts.ResourceVersionMatch)
	}
	if c.opts.Limit > 0 {
		s += fmt.Sprintf(" limit=%d", c.opts.Limit)
	}
	if c.opts.Continue != "" {
		s += " continue"
	}
	if c.opts.SendInitialEvents != nil && *c.opts.SendInitialEvents {
		s += " sendInitialEvents"
	}
	return s
}

// isRelist reports whether the call starts a new snapshot of the
// collection: a first LIST page or a WatchList stream; the resume check is
// not one.
func (c call) isRelist() bool {
	return (c.verb == "LIST" && c.opts.Continue == "" && !c.isResumeCheck()) || c.isWatchList()
}

// isResumeCheck reports the LIST limit=1 an informer makes before each WATCH
// it resumes, to compare the RV with the cluster's current one. Relist pages
// are never that small in these tests (PageSize is at least 40), so Limit=1
// tells the two apart. The apiserver's apiserver_request_total cannot: a
// test that counts LISTs there subtracts the checks the recordingLW saw.
func (c call) isResumeCheck() bool {
	return c.verb == "LIST" && c.opts.Limit == 1 && c.opts.Continue == "" && c.opts.ResourceVersion == ""
}

// withoutResumeChecks returns calls without the resume checks.
func withoutResumeChecks(calls []call) []call {
	var out []call
	for _, c := range calls {
		if !c.isResumeCheck() {
			out = append(out, c)
		}
	}
	return out
}

func (c call) isWatchList() bool {
	return c.verb == "WATCH" && c.opts.SendInitialEvents != nil && *c.opts.SendInitialEvents
}

func newRecordingLW(cl *client, resource, ns string) *recordingLW {
	return &recordingLW{lw: cache.NewListWatchFromClient(cl.CoreV1().RESTClient(), resource, ns, fields.Everything())}
}

func (r *recordingLW) record(verb string, opts metav1.ListOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{verb: verb, opts: opts})
}

func (r *recordingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

func (r *recordingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

func (r *recordingLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	r.record("LIST", opts)
	return r.lw.ListWithContext(ctx, opts)
}

func (r *recordingLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	r.record("WATCH", opts)
	w, err := r.lw.WatchWithContext(ctx, opts)
	if err == nil {
		r.watches.Add(1)
	}
	return w, err
}

// Calls returns the requests made so far.
func (r *recordingLW) Calls() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recordingLW) count(pred func(call) bool) int {
	n := 0
	for _, c := range r.Calls() {
		if pred(c) {
			n++
		}
	}
	return n
}

// event is one handler notification.
type event struct {
	typ     string // add, update, delete, tombstone
	key     string
	rv      string // the object's RV (a tombstone's: of its last known state)
	oldRV   string // update only
	initial bool   // add only
}

func (e event) String() string {
	switch e.typ {
	case "add":
		return fmt.Sprintf("add %s@%s initial=%v", e.key, e.rv, e.initial)
	case "update":
		return fmt.Sprintf("update %s@%s->%s", e.key, e.oldRV, e.rv)
	}
	return fmt.Sprintf("%s %s@%s", e.typ, e.key, e.rv)
}

// recorder is a ResourceEventHandler that records every notification.
type recorder struct {
	mu     sync.Mutex
	events []event
}

func keyOf(obj interface{}) string {
	k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k
}

func (r *recorder) add(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) OnAdd(obj interface{}, initial bool) {
	r.add(event{typ: "add", key: keyOf(obj), rv: testutil.RVOf(obj), initial: initial})
}

func (r *recorder) OnUpdate(old, obj interface{}) {
	r.add(event{typ: "update", key: keyOf(obj), rv: testutil.RVOf(obj), oldRV: testutil.RVOf(old)})
}

func (r *recorder) OnDelete(obj interface{}) {
	if ts, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.add(event{typ: "tombstone", key: ts.Key, rv: testutil.RVOf(ts.Obj)})
		return
	}
	r.add(event{typ: "delete", key: keyOf(obj), rv: testutil.RVOf(obj)})
}

// Events returns the notifications so far.
func (r *recorder) Events() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

// view is the state a handler has seen: the events applied in order, key → RV.
func (r *recorder) view() map[string]string {
	out := map[string]string{}
	for _, e := range r.Events() {
		switch e.typ {
		case "add", "update":
			out[e.key] = e.rv
		default:
			delete(out, e.key)
		}
	}
	return out
}

// seen reports whether an event of type typ for key at rv was recorded.
func (r *recorder) seen(typ, key, rv string) bool {
	for _, e := range r.Events() {
		if e.typ == typ && e.key == key && (rv == "" || e.rv == rv) {
			return true
		}
	}
	return false
}
