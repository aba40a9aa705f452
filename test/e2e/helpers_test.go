package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/boltindexer"
	"github.com/boltinformer/boltinformer/boltindexer/boltindexertest"
	"github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/internal/testcluster"
)

// Timeouts are generous: CI runs these tests with -race on two busy cores.
const (
	syncTimeout     = 4 * time.Minute // an informer's first sync (5k objects under -race)
	convergeTimeout = 3 * time.Minute // a change to reach the cache, through backoff after an apiserver restart
	pollInterval    = 250 * time.Millisecond
	createWorkers   = 16
)

// client is a typed client on the cluster and its HTTP client.
type client struct {
	kubernetes.Interface
	hc *http.Client
}

// newClient returns a client whose idle connections are closed when t ends.
func newClient(t *testing.T, c *testcluster.Cluster) *client {
	t.Helper()
	hc := c.HTTPClient(t)
	cs, err := kubernetes.NewForConfigAndClient(c.Config(), hc)
	if err != nil {
		t.Fatal(err)
	}
	return &client{Interface: cs, hc: hc}
}

// dropConnections closes the client's idle connections, which a restarted
// apiserver no longer serves.
func (c *client) dropConnections() { utilnet.CloseIdleConnectionsFor(c.hc.Transport) }

// restartAPIServer restarts the cluster's apiserver: its watch cache starts
// empty, so a WATCH from an RV older than the restart gets 410 Gone.
func restartAPIServer(t *testing.T, c *testcluster.Cluster, cl *client) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatalf("restart the apiserver: %v", err)
	}
	cl.dropConnections()
	t.Logf("restarted kube-apiserver in %v", time.Since(start).Round(time.Millisecond))
}

var nsSeq atomic.Int64

// newNamespace creates a namespace for one test. Namespaces are never
// deleted: without a controller-manager they would stay Terminating.
func newNamespace(t *testing.T, cl *client, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, nsSeq.Add(1))
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cl.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// retry calls fn until it succeeds or fails with an answer from the
// apiserver; errors of the connection (an apiserver that just restarted)
// are retried for up to a minute.
func retry(fn func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := fn()
		var status apierrors.APIStatus
		if err == nil || errors.As(err, &status) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func cmName(i int) string { return fmt.Sprintf("cm-%05d", i) }

func newConfigMap(ns string, i int, version string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: cmName(i), Namespace: ns, Labels: map[string]string{"shard": fmt.Sprint(i % 8)}},
		Data:       map[string]string{"version": version, "payload": strings.Repeat("x", 256)},
	}
}

func newPod(ns string, i int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Namespace: ns, Labels: map[string]string{"app": "e2e", "shard": fmt.Sprint(i % 8)}},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "main", Image: "registry.invalid/e2e:1",
			Env: []v1.EnvVar{{Name: "INDEX", Value: fmt.Sprint(i)}},
		}}},
	}
}

// createParallel calls create(i) for i in [0,n) on createWorkers goroutines.
func createParallel(t *testing.T, n int, create func(ctx context.Context, i int) error) {
	t.Helper()
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(createWorkers)
	for i := 0; i < n; i++ {
		g.Go(func() error { return retry(func() error { return create(ctx, i) }) })
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("create objects: %v", err)
	}
}

// createConfigMaps creates ConfigMaps [from,to) in ns and returns them by key.
func createConfigMaps(t *testing.T, cl *client, ns string, from, to int) map[string]*v1.ConfigMap {
	t.Helper()
	var mu sync.Mutex
	out := map[string]*v1.ConfigMap{}
	createParallel(t, to-from, func(ctx context.Context, i int) error {
		cm, err := cl.CoreV1().ConfigMaps(ns).Create(ctx, newConfigMap(ns, from+i, "v1"), metav1.CreateOptions{})
		if err == nil {
			mu.Lock()
			out[ns+"/"+cm.Name] = cm
			mu.Unlock()
		}
		return err
	})
	return out
}

// mutation is what a test changed, for the events handlers must see.
type mutation struct {
	created map[string]string   // key → RV
	updated map[string][]string // key → RVs, in order (the first is the RV before)
	deleted map[string]string   // key → RV before the delete
}

func newMutation() *mutation {
	return &mutation{created: map[string]string{}, updated: map[string][]string{}, deleted: map[string]string{}}
}

func (m *mutation) create(t *testing.T, cl *client, ns string, i int) *v1.ConfigMap {
	t.Helper()
	var cm *v1.ConfigMap
	err := retry(func() (err error) {
		cm, err = cl.CoreV1().ConfigMaps(ns).Create(context.Background(), newConfigMap(ns, i, "v1"), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("create %s: %v", cmName(i), err)
	}
	m.created[ns+"/"+cm.Name] = cm.ResourceVersion
	return cm
}

func (m *mutation) update(t *testing.T, cl *client, cm *v1.ConfigMap, version string) *v1.ConfigMap {
	t.Helper()
	cm = cm.DeepCopy()
	cm.Data["version"] = version
	var out *v1.ConfigMap
	err := retry(func() (err error) {
		out, err = cl.CoreV1().ConfigMaps(cm.Namespace).Update(context.Background(), cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update %s: %v", cm.Name, err)
	}
	key := cm.Namespace + "/" + cm.Name
	if _, ok := m.updated[key]; !ok {
		m.updated[key] = []string{cm.ResourceVersion}
	}
	m.updated[key] = append(m.updated[key], out.ResourceVersion)
	return out
}

func (m *mutation) delete(t *testing.T, cl *client, cm *v1.ConfigMap) {
	t.Helper()
	err := retry(func() error {
		return cl.CoreV1().ConfigMaps(cm.Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
	})
	if err != nil {
		t.Fatalf("delete %s: %v", cm.Name, err)
	}
	m.deleted[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
}

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
// collection: a first LIST page or a WatchList stream.
func (c call) isRelist() bool {
	return (c.verb == "LIST" && c.opts.Continue == "") || c.isWatchList()
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

func rvOf(obj interface{}) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetResourceVersion()
	}
	return "?"
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
	r.add(event{typ: "add", key: keyOf(obj), rv: rvOf(obj), initial: initial})
}

func (r *recorder) OnUpdate(old, obj interface{}) {
	r.add(event{typ: "update", key: keyOf(obj), rv: rvOf(obj), oldRV: rvOf(old)})
}

func (r *recorder) OnDelete(obj interface{}) {
	if ts, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.add(event{typ: "tombstone", key: ts.Key, rv: rvOf(ts.Obj)})
		return
	}
	r.add(event{typ: "delete", key: keyOf(obj), rv: rvOf(obj)})
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

// informerSpec is one informer of a runningCache.
type informerSpec struct {
	resource string         // "configmaps" or "pods"
	example  runtime.Object // &v1.ConfigMap{} or &v1.Pod{}
	opts     boltinformer.InformerOptions
}

func configMapSpec(opts boltinformer.InformerOptions) informerSpec {
	return informerSpec{resource: "configmaps", example: &v1.ConfigMap{}, opts: opts}
}

// runningInformer is one informer of a runningCache with what it recorded.
type runningInformer struct {
	*boltinformer.Informer
	lw  *recordingLW
	rec *recorder
	// startRV is the store's RV when the informer was made ("" if cold).
	startRV string
}

// runningCache is a cache file with informers running on it.
type runningCache struct {
	t       *testing.T
	path    string
	cache   *boltinformer.Cache
	infs    []*runningInformer
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool
}

// startCache opens path, starts one informer per spec on the objects of ns
// with a recorder as its handler, and waits until all have synced. The
// cache is stopped in t's cleanup if the test did not stop it.
func startCache(t *testing.T, cl *client, path, ns string, specs ...informerSpec) *runningCache {
	t.Helper()
	c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	rc := &runningCache{t: t, path: path, cache: c}
	ctx, cancel := context.WithCancel(context.Background())
	rc.cancel = cancel
	t.Cleanup(rc.stop)
	var synced []cache.InformerSynced
	for _, s := range specs {
		opts := s.opts
		opts.Namespace, opts.Resource = ns, s.resource
		lw := newRecordingLW(cl, s.resource, ns)
		inf, err := c.NewInformer(lw, s.example, opts)
		if err != nil {
			t.Fatalf("informer for %s: %v", s.resource, err)
		}
		ri := &runningInformer{Informer: inf, lw: lw, rec: &recorder{}}
		if ri.startRV, err = inf.Store().ResourceVersion(); err != nil {
			t.Fatal(err)
		}
		reg, err := inf.AddEventHandler(ri.rec)
		if err != nil {
			t.Fatal(err)
		}
		rc.infs = append(rc.infs, ri)
		synced = append(synced, inf.HasSynced, reg.HasSynced)
	}
	start := time.Now()
	for _, ri := range rc.infs {
		rc.wg.Go(func() { ri.RunWithContext(ctx) })
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		t.Fatalf("informers did not sync within %v", syncTimeout)
	}
	t.Logf("informers on %s synced in %v", filepath.Base(path), time.Since(start).Round(time.Millisecond))
	return rc
}

// stop stops the informers (graceful: cancel, wait for Run), verifies
// their stores, closes the file and checks it. It is idempotent.
func (rc *runningCache) stop() {
	rc.t.Helper()
	if rc.stopped {
		return
	}
	rc.stopped = true
	rc.cancel()
	rc.wg.Wait()
	for _, ri := range rc.infs {
		if !ri.IsStopped() {
			rc.t.Errorf("%s: IsStopped false after Run returned", ri.Name())
		}
		boltindexertest.Verify(rc.t, ri.Store())
	}
	if err := rc.cache.Close(); err != nil {
		rc.t.Errorf("close %s: %v", rc.path, err)
	}
	boltindexertest.CheckFile(rc.t, rc.path)
}

// objects returns the objects an informer's store holds, by key.
func storeObjects(inf *boltinformer.Informer) map[string]runtime.Object {
	out := map[string]runtime.Object{}
	for _, o := range inf.GetStore().List() {
		obj := o.(runtime.Object)
		out[keyOf(obj)] = obj
	}
	return out
}

// listObjects lists resource in ns from the apiserver (a consistent read)
// and returns the objects by key.
func listObjects(t *testing.T, cl *client, resource, ns string, opts metav1.ListOptions) map[string]runtime.Object {
	t.Helper()
	out := map[string]runtime.Object{}
	ctx := context.Background()
	err := retry(func() error {
		clear(out)
		switch resource {
		case "configmaps":
			l, err := cl.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				return err
			}
			for i := range l.Items {
				out[ns+"/"+l.Items[i].Name] = &l.Items[i]
			}
		case "pods":
			l, err := cl.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				return err
			}
			for i := range l.Items {
				out[ns+"/"+l.Items[i].Name] = &l.Items[i]
			}
		default:
			return fmt.Errorf("listObjects: unknown resource %q", resource)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list %s in %s: %v", resource, ns, err)
	}
	return out
}

// rvs maps each key to its object's RV.
func rvs(objs map[string]runtime.Object) map[string]string {
	out := make(map[string]string, len(objs))
	for k, o := range objs {
		out[k] = rvOf(o)
	}
	return out
}

// diffRVs describes how got differs from want (key → RV), or "" if equal.
func diffRVs(want, got map[string]string) string {
	var missing, extra, stale []string
	for k, rv := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != rv:
			stale = append(stale, fmt.Sprintf("%s@%s want @%s", k, g, rv))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(stale) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(stale)
	return fmt.Sprintf("%d objects, want %d: missing %s; extra %s; stale %s",
		len(got), len(want), head(missing), head(extra), head(stale))
}

func head(s []string) string {
	if len(s) > 5 {
		return fmt.Sprintf("%v … (%d)", s[:5], len(s))
	}
	return fmt.Sprint(s)
}

// normalized returns a copy of obj without TypeMeta: a LIST's items have
// none, the cache restores it from the store's kind.
func normalized(obj runtime.Object) runtime.Object {
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return c
}

// assertSameObjects fails t unless got holds exactly the objects of want
// (keys, RVs, and content by apiequality.Semantic.DeepEqual).
func assertSameObjects(t *testing.T, what string, want, got map[string]runtime.Object) {
	t.Helper()
	if d := diffRVs(rvs(want), rvs(got)); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
	bad := 0
	for k, w := range want {
		if !apiequality.Semantic.DeepEqual(normalized(w), normalized(got[k])) {
			if bad++; bad <= 3 {
				t.Errorf("%s: %s differs from the apiserver's:\n cache     %+v\n apiserver %+v", what, k, got[k], w)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d objects differ in content", what, bad, len(want))
	}
}

// eventually polls cond until it returns "" or timeout passes; cond
// returns a description of what is still wrong.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, timeout, true, func(context.Context) (bool, error) {
		last = cond()
		return last == "", nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, last)
	}
}

// requestCount reads the apiserver's count of verb requests on resource.
func requestCount(t *testing.T, c *testcluster.Cluster, verb, resource string) float64 {
	t.Helper()
	n, err := c.RequestCount(context.Background(), verb, resource)
	if err != nil {
		t.Fatalf("read apiserver_request_total: %v", err)
	}
	return n
}

// sortedEvents returns the events' strings, sorted.
func sortedEvents(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.String()
	}
	sort.Strings(out)
	return out
}

// assertEvents fails t unless got and want hold the same events (in any order).
func assertEvents(t *testing.T, what string, want, got []event) {
	t.Helper()
	w, g := sortedEvents(want), sortedEvents(got)
	if strings.Join(w, "\n") != strings.Join(g, "\n") {
		t.Fatalf("%s: handler saw %d events, want %d:\n got  %s\n want %s", what, len(g), len(w), strings.Join(g, "\n      "), strings.Join(w, "\n      "))
	}
}

// openReadOnly opens store name of the closed file at path read-only.
func openReadOnly(t *testing.T, path, name string, example runtime.Object) *boltindexer.Store {
	t.Helper()
	st, err := boltindexer.Open(path, name, cachefile.Options{ReadOnly: true}, boltindexer.StoreOptions{Object: example})
	if err != nil {
		t.Fatalf("open %s read-only: %v", path, err)
	}
	return st
}
