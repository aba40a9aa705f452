package listwatchertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Timeout bounds every wait of the fakes on the code under test.
var Timeout = 10 * time.Second

// Verb is the kind of a request.
type Verb string

const (
	VerbList  Verb = "list"
	VerbWatch Verb = "watch"
)

// Call is one request, as the code under test made it.
type Call struct {
	Verb    Verb
	Options metav1.ListOptions
}

func (c Call) String() string {
	s := fmt.Sprintf("%s rv=%q", c.Verb, c.Options.ResourceVersion)
	if c.Options.Limit != 0 {
		s += fmt.Sprintf(" limit=%d", c.Options.Limit)
	}
	if c.Options.Continue != "" {
		s += fmt.Sprintf(" continue=%q", c.Options.Continue)
	}
	if c.Options.SendInitialEvents != nil {
		s += fmt.Sprintf(" sendInitialEvents=%t", *c.Options.SendInitialEvents)
	}
	return s
}

// ListerWatcher is a scripted cache.ListerWatcher (and
// ListerWatcherWithContext). Each List or Watch is recorded, then blocks until
// the test takes it with Next and answers it, or until its context is done.
type ListerWatcher struct {
	// WatchListUnsupported is what IsWatchListSemanticsUnSupported reports.
	WatchListUnsupported bool

	requests chan *Request

	// callsMu protects calls.
	callsMu sync.Mutex
	calls   []Call
}

var (
	_ cache.ListerWatcher            = (*ListerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*ListerWatcher)(nil)
)

// NewListerWatcher returns a ListerWatcher with no request made yet.
func NewListerWatcher() *ListerWatcher {
	return &ListerWatcher{requests: make(chan *Request)}
}

// Request is a List or Watch waiting for the test's answer. Answer it once.
type Request struct {
	Call
	ctx   context.Context
	reply chan reply
}

type reply struct {
	obj runtime.Object
	w   watch.Interface
	err error
}

// RespondList answers a List with obj.
func (r *Request) RespondList(obj runtime.Object) { r.reply <- reply{obj: obj} }

// RespondError answers a List or Watch with err.
func (r *Request) RespondError(err error) { r.reply <- reply{err: err} }

// RespondWatch answers a Watch with a new Watcher and returns it.
func (r *Request) RespondWatch() *Watcher {
	w := NewWatcher()
	r.reply <- reply{w: w}
	return w
}

// RespondEncodedWatch answers a Watch with a new EncodedWatcher and
// returns it.
func (r *Request) RespondEncodedWatch() EncodedWatcher {
	w := NewEncodedWatcher()
	r.reply <- reply{w: w}
	return w
}

// Done is closed when the context of the request is done.
func (r *Request) Done() <-chan struct{} { return r.ctx.Done() }

// List implements cache.Lister.
func (lw *ListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// Watch implements cache.Watcher.
func (lw *ListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWithContext.
func (lw *ListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	rep, err := lw.do(ctx, VerbList, opts)
	if err != nil {
		return nil, err
	}
	return rep.obj, rep.err
}

// WatchWithContext implements cache.WatcherWithContext.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	rep, err := lw.do(ctx, VerbWatch, opts)
	if err != nil {
		return nil, err
	}
	if rep.err != nil {
		return nil, rep.err
	}
	return rep.w, nil
}

// IsWatchListSemanticsUnSupported is what client-go's reflectors ask to
// decide whether a client can stream lists.
func (lw *ListerWatcher) IsWatchListSemanticsUnSupported() bool { return lw.WatchListUnsupported }

func (lw *ListerWatcher) do(ctx context.Context, verb Verb, opts metav1.ListOptions) (reply, error) {
	req := &Request{Call: Call{Verb: verb, Options: opts}, ctx: ctx, reply: make(chan reply, 1)}
	lw.callsMu.Lock()
	lw.calls = append(lw.calls, req.Call)
	lw.callsMu.Unlock()
	select {
	case lw.requests <- req:
	case <-ctx.Done():
		return reply{}, ctx.Err()
	}
	select {
	case rep := <-req.reply:
		if rep.w != nil && ctx.Err() != nil {
			rep.w.Stop()
			return reply{}, ctx.Err()
		}
		return rep, nil
	case <-ctx.Done():
		return reply{}, ctx.Err()
	}
}

// Calls returns every request made so far, in order, answered or not.
func (lw *ListerWatcher) Calls() []Call {
	lw.callsMu.Lock()
	defer lw.callsMu.Unlock()
	return append([]Call(nil), lw.calls...)
}

// Next waits for the next request and returns it for the test to answer.
func (lw *ListerWatcher) Next(t testing.TB) *Request {
	t.Helper()
	select {
	case req := <-lw.requests:
		return req
	case <-time.After(Timeout):
		t.Fatalf("no list or watch request within %v; requests so far: %v", Timeout, lw.Calls())
		return nil
	}
}

// ExpectNoRequest fails the test if a request arrives within d.
func (lw *ListerWatcher) ExpectNoRequest(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case req := <-lw.requests:
		t.Fatalf("unexpected request %v", req.Call)
	case <-time.After(d):
	}
}
