package listwatcher_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
	rt "github.com/boltinformer/boltinformer/internal/listwatcher/listwatchertest"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// harness runs a Reflector against the fakes until the test ends.
type harness struct {
	t       *testing.T
	lw      *rt.ListerWatcher
	sink    *rt.Sink
	clock   *testingclock.FakeClock
	metrics *recordingMetrics
	r       *listwatcher.Reflector

	// mu protects errs and established.
	mu          sync.Mutex
	errs        []error
	established []string

	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

// setup tunes what start does to the options.
type setup struct {
	// defaultBackoff keeps a nil Options.Backoff (the default backoff).
	defaultBackoff bool
	// autoWatchList keeps WatchListAuto, which start turns into WatchListOff.
	autoWatchList bool
	// watchListUnsupported makes the fake ListerWatcher say its client cannot stream lists.
	watchListUnsupported bool
}

// start runs a Reflector for *corev1.Pod with opts completed by the fakes. A
// nil opts.Backoff becomes a zero backoff, so that retries need no clock
// step, and WatchListAuto becomes WatchListOff.
func start(t *testing.T, opts listwatcher.Options) *harness {
	t.Helper()
	return startWith(t, opts, setup{})
}

func startWith(t *testing.T, opts listwatcher.Options, s setup) *harness {
	t.Helper()
	if opts.Backoff == nil && !s.defaultBackoff {
		opts.Backoff = &wait.Backoff{}
	}
	if opts.WatchList == reflector.WatchListAuto && !s.autoWatchList {
		opts.WatchList = reflector.WatchListOff
	}
	h := &harness{
		t:       t,
		lw:      rt.NewListerWatcher(),
		sink:    rt.NewSink(),
		clock:   testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		metrics: &recordingMetrics{},
		done:    make(chan error, 1),
	}
	h.lw.WatchListUnsupported = s.watchListUnsupported
	opts.Clock = h.clock
	opts.Metrics = h.metrics
	if opts.WatchEstablishedAfter == 0 {
		opts.WatchEstablishedAfter = -1 // at once; TestWatchEstablishedOnlyWithoutAnEarlyError tests the grace
	}
	opts.WatchErrorHandler = func(ctx context.Context, r *listwatcher.Reflector, err error) {
		h.mu.Lock()
		h.errs = append(h.errs, err)
		h.mu.Unlock()
	}
	opts.OnWatchEstablished = func(rv string) {
		h.mu.Lock()
		h.established = append(h.established, rv)
		h.mu.Unlock()
	}
	h.r = listwatcher.New(h.lw, &corev1.Pod{}, h.sink, opts)
	ctx, cancel := context.WithCancel(testutil.Context(t))
	h.cancel = cancel
	go func() { h.done <- h.r.Run(ctx) }()
	t.Cleanup(func() { h.stop() })
	return h
}

// stop cancels Run and fails the test unless it returns promptly.
func (h *harness) stop() {
	h.t.Helper()
	h.stopOnce.Do(func() {
		h.cancel()
		select {
		case err := <-h.done:
			if err != nil {
				h.t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(5 * time.Second):
			h.t.Fatalf("Run did not return within 5s of its context being cancelled")
		}
	})
}

func (h *harness) errors() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.errs)
}

func (h *harness) establishedRVs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.established)
}

// nextWatch takes the next request, checks it is a plain WATCH from rv, and
// answers it with a new Watcher.
func (h *harness) nextWatch(rv string) *rt.Watcher {
	h.t.Helper()
	req := h.lw.Next(h.t)
	expectWatch(h.t, req, rv)
	return req.RespondWatch()
}

// nextList takes the next request and checks it is a LIST page: a consistent
// read (RV "") with the page size, continuing from cont.
func (h *harness) nextList(limit int64, cont string) *rt.Request {
	h.t.Helper()
	req := h.lw.Next(h.t)
	expectList(h.t, req, limit, cont)
	return req
}

// waitForWaiter waits until the reflector sleeps on the fake clock.
func (h *harness) waitForWaiter() {
	h.t.Helper()
	testutil.Eventually(h.t, "the reflector waits on the clock", rt.Timeout, h.clock.HasWaiters)
}

func expectWatch(t *testing.T, req *rt.Request, rv string) {
	t.Helper()
	o := req.Options
	if req.Verb != rt.VerbWatch || o.ResourceVersion != rv {
		t.Fatalf("request = %v, want a watch from %q", req.Call, rv)
	}
	if !o.AllowWatchBookmarks {
		t.Errorf("watch without allowWatchBookmarks")
	}
	if o.TimeoutSeconds == nil || *o.TimeoutSeconds < 300 || *o.TimeoutSeconds >= 600 {
		t.Errorf("watch timeoutSeconds = %v, want within [300, 600)", o.TimeoutSeconds)
	}
	if o.SendInitialEvents != nil || o.ResourceVersionMatch != "" || o.Limit != 0 || o.Continue != "" {
		t.Errorf("plain watch with list options: %+v", o)
	}
}

func expectList(t *testing.T, req *rt.Request, limit int64, cont string) {
	t.Helper()
	o := req.Options
	if req.Verb != rt.VerbList || o.ResourceVersion != "" || o.ResourceVersionMatch != "" || o.Limit != limit || o.Continue != cont {
		t.Fatalf("request = %v (match %q), want list rv=\"\" limit=%d continue=%q", req.Call, o.ResourceVersionMatch, limit, cont)
	}
}

// expectCalls checks the sink received exactly want, waiting for them first.
func expectCalls(t *testing.T, s *rt.Sink, want ...string) {
	t.Helper()
	got := s.WaitForCalls(t, len(want))
	if !slices.Equal(got, want) {
		t.Fatalf("sink calls:\n got %s\nwant %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}

// expectNoLists checks that no LIST was ever requested.
func expectNoLists(t *testing.T, lw *rt.ListerWatcher) {
	t.Helper()
	for _, c := range lw.Calls() {
		if c.Verb == rt.VerbList {
			t.Fatalf("unexpected LIST among %v", lw.Calls())
		}
	}
}

func bookmark(rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
}

func initialEventsEnd(rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: rv,
		Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
	}}
}

// page returns a list page at rv, continued by cont, holding pods named by
// names (each with RV "1").
func page(rv, cont string, names ...string) *corev1.PodList {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont}}
	for _, n := range names {
		l.Items = append(l.Items, *testutil.Pod("ns", n, "1"))
	}
	return l
}

func expiredErr() error {
	return apierrors.NewResourceExpired("too old resource version: 100 (200)")
}

func goneErr() error {
	return apierrors.NewGone("too old resource version")
}

func tooLargeErr() error {
	err := apierrors.NewTimeoutError("Too large resource version", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// tooLargeCauseMessageErr is how apiservers 1.17.0–1.18.5 said it.
func tooLargeCauseMessageErr() error {
	err := apierrors.NewTimeoutError("timeout", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
	return err
}

// tooLargeMessageErr is how apiservers before 1.17 said it.
func tooLargeMessageErr() error {
	return apierrors.NewTimeoutError("Too large resource version", 1)
}

func tooManyRequestsErr() error {
	return apierrors.NewTooManyRequests("slow down", 1)
}

func status(err error) metav1.Status {
	return err.(apierrors.APIStatus).Status()
}

// metrics is what recordingMetrics saw.
type metrics struct {
	relists   []listwatcher.RelistReason
	restarts  int
	pages     []int
	resumes   int
	fallbacks int
	backoffs  []time.Duration
	failures  []error
	closes    int
}

func (m metrics) String() string {
	return fmt.Sprintf("relists=%v restarts=%d pages=%v resumes=%d fallbacks=%d backoffs=%v failures=%v closes=%d",
		m.relists, m.restarts, m.pages, m.resumes, m.fallbacks, m.backoffs, m.failures, m.closes)
}

// recordingMetrics records every call of listwatcher.Metrics.
type recordingMetrics struct {
	// mu protects m.
	mu sync.Mutex
	m  metrics
}

func (r *recordingMetrics) record(f func(m *metrics)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.m)
}

func (r *recordingMetrics) RelistStarted(reason listwatcher.RelistReason) {
	r.record(func(m *metrics) { m.relists = append(m.relists, reason) })
}
func (r *recordingMetrics) ListRestarted() { r.record(func(m *metrics) { m.restarts++ }) }
func (r *recordingMetrics) ListPage(n int) {
	r.record(func(m *metrics) { m.pages = append(m.pages, n) })
}
func (r *recordingMetrics) WatchResumed()      { r.record(func(m *metrics) { m.resumes++ }) }
func (r *recordingMetrics) WatchListFallback() { r.record(func(m *metrics) { m.fallbacks++ }) }
func (r *recordingMetrics) Backoff(d time.Duration) {
	r.record(func(m *metrics) { m.backoffs = append(m.backoffs, d) })
}

func (r *recordingMetrics) ListWatchFailed(err error) {
	r.record(func(m *metrics) { m.failures = append(m.failures, err) })
}
func (r *recordingMetrics) WatchClosed() { r.record(func(m *metrics) { m.closes++ }) }

func (r *recordingMetrics) snapshot() metrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.m
	m.relists = slices.Clone(m.relists)
	m.pages = slices.Clone(m.pages)
	m.backoffs = slices.Clone(m.backoffs)
	m.failures = slices.Clone(m.failures)
	return m
}
