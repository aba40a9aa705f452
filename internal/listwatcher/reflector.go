package listwatcher

import (
	"context"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/boltinformer/boltinformer/reflector"
)

// Reflector keeps a Sink current with one resource of the apiserver. Make one
// with New and start it with Run.
//
// Everything but lastSyncRV belongs to the goroutine running Run.
type Reflector struct {
	name            string
	typeDescription string
	lw              cache.ListerWatcherWithContext
	sink            Sink

	// expectedType is the Go type of watched objects; nil accepts any.
	expectedType reflect.Type
	// expectedGVK is the GVK of watched objects when expectedType is an
	// unstructured object with one; nil accepts any.
	expectedGVK *schema.GroupVersionKind

	startRV          string
	mustRelist       bool
	mustRelistReason RelistReason
	checkResumeRV    bool
	pageSize         int64
	pages            *pageSizer
	maxQueued        int // 0: the current page limit
	useWatchList     bool
	minWatchTimeout  time.Duration

	clock              clock.Clock
	backoff            *backoff
	logger             *klog.Logger
	metrics            Metrics
	onWatchEstablished func(rv string)
	establishedAfter   time.Duration
	watchErrorHandler  WatchErrorHandler

	// started turns true at the first Run.
	started atomic.Bool
	// relistRequests holds at most one reason sent by RequestRelist and not
	// yet served by a relist.
	relistRequests chan RelistReason

	// lastSyncRVMu protects lastSyncRV.
	lastSyncRVMu sync.RWMutex
	// lastSyncRV is the last RV the sink accepted: a list's RV, an event's or
	// a bookmark's. The next watch starts from it.
	lastSyncRV string
}

// New returns a Reflector that lists and watches with lw and feeds sink.
// expectedType (nil accepts anything) is an example of the objects expected
// from watches; events of another type, or of another GVK when it is an
// unstructured object with apiVersion and kind, are dropped and logged. lw is
// used through its WithContext methods when it has them; without them a list
// or watch in flight cannot be cancelled.
func New(lw cache.ListerWatcher, expectedType runtime.Object, sink Sink, opts Options) *Reflector {
	return newReflector(cache.ToListerWatcherWithContext(lw), lw, expectedType, sink, opts)
}

// NewWithContext is New for a ListerWatcher that only has the WithContext methods.
func NewWithContext(lw cache.ListerWatcherWithContext, expectedType runtime.Object, sink Sink, opts Options) *Reflector {
	return newReflector(lw, lw, expectedType, sink, opts)
}

func newReflector(lw cache.ListerWatcherWithContext, client any, expectedType runtime.Object, sink Sink, opts Options) *Reflector {
	r := &Reflector{
		name:               opts.Name,
		typeDescription:    opts.TypeDescription,
		lw:                 lw,
		sink:               sink,
		startRV:            opts.StartRV,
		mustRelist:         opts.MustRelist,
		mustRelistReason:   opts.MustRelistReason,
		checkResumeRV:      opts.CheckResumeRV,
		pageSize:           opts.PageSize,
		maxQueued:          opts.MaxQueuedItems,
		minWatchTimeout:    max(opts.MinWatchTimeout, DefaultMinWatchTimeout),
		clock:              opts.Clock,
		logger:             opts.Logger,
		metrics:            opts.Metrics,
		onWatchEstablished: opts.OnWatchEstablished,
		establishedAfter:   opts.WatchEstablishedAfter,
		watchErrorHandler:  opts.WatchErrorHandler,
		lastSyncRV:         opts.StartRV,
		relistRequests:     make(chan RelistReason, 1),
	}
	if expectedType != nil {
		r.expectedType = reflect.TypeOf(expectedType)
		if u, ok := expectedType.(*unstructured.Unstructured); ok {
			if gvk := u.GroupVersionKind(); !gvk.Empty() {
				r.expectedGVK = &gvk
			}
		}
	}
	if r.typeDescription == "" {
		r.typeDescription = describeType(expectedType)
	}
	if r.name == "" {
		r.name = r.typeDescription
	}
	if r.pageSize <= 0 {
		r.pageSize = DefaultPageSize
	}
	pageBytes := opts.PageBytes
	if pageBytes == 0 {
		pageBytes = DefaultPageBytes
	}
	r.pages = newPageSizer(r.pageSize, pageBytes)
	r.maxQueued = max(r.maxQueued, 0)
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	b := defaultBackoff()
	if opts.Backoff != nil {
		b = *opts.Backoff
	}
	reset := opts.BackoffReset
	if reset <= 0 {
		reset = DefaultBackoffReset
	}
	r.backoff = newBackoff(r.clock, b, reset)
	if r.metrics == nil {
		r.metrics = NoopMetrics{}
	}
	if r.establishedAfter == 0 {
		r.establishedAfter = DefaultWatchEstablishedAfter
	}
	if r.onWatchEstablished == nil {
		r.onWatchEstablished = func(string) {}
	}
	if r.watchErrorHandler == nil {
		r.watchErrorHandler = DefaultWatchErrorHandler
	}
	switch opts.WatchList {
	case reflector.WatchListOn:
		r.useWatchList = true
	case reflector.WatchListAuto:
		r.useWatchList = clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) &&
			!watchlist.DoesClientNotSupportWatchListSemantics(client)
	}
	return r
}

// describeType names expectedType for logs: the GVK of an unstructured object
// that has one, else the Go type.
func describeType(expectedType runtime.Object) string {
	if expectedType == nil {
		return "<unspecified>"
	}
	if u, ok := expectedType.(*unstructured.Unstructured); ok {
		if gvk := u.GroupVersionKind(); !gvk.Empty() {
			return gvk.String()
		}
	}
	return reflect.TypeOf(expectedType).String()
}

// Name identifies the reflector in logs.
func (r *Reflector) Name() string { return r.name }

// TypeDescription names the watched type in logs.
func (r *Reflector) TypeDescription() string { return r.typeDescription }

// LastSyncResourceVersion returns the last RV the sink accepted: the RV of the
// last relist, watch event or bookmark; Options.StartRV before any. The sink
// may not have applied it yet.
func (r *Reflector) LastSyncResourceVersion() string {
	r.lastSyncRVMu.RLock()
	defer r.lastSyncRVMu.RUnlock()
	return r.lastSyncRV
}

func (r *Reflector) setLastSyncResourceVersion(rv string) {
	r.lastSyncRVMu.Lock()
	defer r.lastSyncRVMu.Unlock()
	r.lastSyncRV = rv
}

// Run keeps the sink current until ctx is done, then returns nil once every
// request it made has ended. It starts no goroutine of its own. A Reflector
// runs once; a second Run returns ErrAlreadyRunning.
func (r *Reflector) Run(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	logger := klog.FromContext(ctx)
	if r.logger != nil {
		logger = *r.logger
	}
	logger = klog.LoggerWithName(logger, "reflector")
	if r.name != r.typeDescription {
		logger = klog.LoggerWithValues(logger, "reflector", r.name)
	}
	logger = klog.LoggerWithValues(logger, "type", r.typeDescription)
	ctx = klog.NewContext(ctx, logger)

	reason := r.initialAction()
	logger.V(3).Info("Starting reflector", "startRV", r.startRV, "relist", reason, "watchList", r.useWatchList)
	defer func() { logger.V(3).Info("Stopping reflector", "lastSyncRV", r.LastSyncResourceVersion()) }()

	var resumed watchStream
	for ctx.Err() == nil {
		afterRelist := reason != ""
		if afterRelist {
			w, err := r.relist(ctx, reason)
			if ctx.Err() != nil {
				w.stop()
				return nil
			}
			if err != nil {
				r.reportError(ctx, err)
				if !r.sleepBackoff(ctx) {
					return nil
				}
				continue
			}
			resumed = w
		}
		// watch returns only when the RV is unusable or ctx is done.
		reason = r.watch(ctx, resumed, afterRelist)
		resumed = watchStream{}
		if reason != "" && !r.sleepBackoff(ctx) {
			return nil
		}
	}
	return nil
}

// RequestRelist makes a running reflector relist with reason: it ends the
// watch it is consuming and relists. A relist that begins after the call
// serves it, so a request made while one is already pending, or just before
// a relist begins for another reason, costs no extra relist. It never blocks.
func (r *Reflector) RequestRelist(reason RelistReason) {
	select {
	case r.relistRequests <- reason:
	default:
	}
}

// takeRelistRequest returns the pending RequestRelist reason, or "".
func (r *Reflector) takeRelistRequest() RelistReason {
	select {
	case reason := <-r.relistRequests:
		return reason
	default:
		return ""
	}
}

// initialAction returns the reason for a first relist, or "" for a warm start.
func (r *Reflector) initialAction() RelistReason {
	switch {
	case r.mustRelist && r.mustRelistReason != "":
		return r.mustRelistReason
	case isColdResourceVersion(r.startRV):
		return RelistColdStart
	case r.mustRelist:
		return RelistRequired
	}
	return ""
}

// isColdResourceVersion reports an RV a watch cannot resume from: a watch
// from "" or "0" starts with synthetic ADDED events of every object.
func isColdResourceVersion(rv string) bool {
	return rv == "" || rv == "0"
}

// reportError counts err and hands it to the WatchErrorHandler.
func (r *Reflector) reportError(ctx context.Context, err error) {
	r.metrics.ListWatchFailed(err)
	r.watchErrorHandler(ctx, r, err)
}

// sleepBackoff waits the next backoff delay and reports whether ctx is still
// live afterwards.
func (r *Reflector) sleepBackoff(ctx context.Context) bool {
	d := r.backoff.next()
	r.metrics.Backoff(d)
	klog.FromContext(ctx).V(4).Info("Backing off", "delay", d)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// watchTimeout returns a random server-side timeout in [min, 2*min) so that
// the watches of many clients do not all end at once.
func (r *Reflector) watchTimeout() *int64 {
	d := r.minWatchTimeout + rand.N(r.minWatchTimeout)
	s := int64(d / time.Second)
	return &s
}

// accepts reports whether a watched object has the expected type and GVK; it
// logs and drops the others, as client-go does.
func (r *Reflector) accepts(ctx context.Context, obj runtime.Object) bool {
	if r.expectedType != nil {
		if got := reflect.TypeOf(obj); got != r.expectedType {
			utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object type", "expectedType", r.expectedType, "actualType", got)
			return false
		}
	}
	if r.expectedGVK != nil {
		if got := obj.GetObjectKind().GroupVersionKind(); got != *r.expectedGVK {
			utilruntime.HandleErrorWithContext(ctx, nil, "Unexpected watch event object GVK", "expectedGVK", *r.expectedGVK, "actualGVK", got)
			return false
		}
	}
	if isTable(obj) {
		utilruntime.HandleErrorWithContext(ctx, ErrUnsupportedTable, "Unsupported watch event object", "actualGVK", obj.GetObjectKind().GroupVersionKind())
		return false
	}
	return true
}

// tableGVKs are the GVKs of the Table responses the apiserver gives to
// clients asking for tabular output; a cache cannot hold them.
var tableGVKs = map[schema.GroupVersionKind]bool{
	metav1.SchemeGroupVersion.WithKind("Table"):      true,
	metav1beta1.SchemeGroupVersion.WithKind("Table"): true,
}

func isTable(obj runtime.Object) bool {
	if _, ok := obj.(*unstructured.Unstructured); !ok {
		return false
	}
	return tableGVKs[obj.GetObjectKind().GroupVersionKind()]
}

func isTableList(obj runtime.Object) bool {
	if _, ok := obj.(*unstructured.UnstructuredList); !ok {
		return false
	}
	return tableGVKs[obj.GetObjectKind().GroupVersionKind()]
}
