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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testcluster"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// Timeouts are generous: CI runs these tests with -race on two busy cores.
const (
	syncTimeout     = 4 * time.Minute // an informer's first sync (5k objects under -race)
	convergeTimeout = 3 * time.Minute // a change to reach the cache, through backoff after an apiserver restart
	createWorkers   = 16
)

// client is a typed client on the cluster, its HTTP client, and the
// context of its requests.
type client struct {
	kubernetes.Interface
	hc *http.Client
	// ctx carries the logger of the test that made the client: what
	// client-go logs about a request goes to that test's output.
	ctx context.Context
}

// newClient returns a client whose idle connections are closed when t ends.
func newClient(t *testing.T, c *testcluster.Cluster) *client {
	t.Helper()
	hc := c.HTTPClient(t)
	cs, err := kubernetes.NewForConfigAndClient(c.Config(), hc)
	if err != nil {
		t.Fatal(err)
	}
	return &client{Interface: cs, hc: hc, ctx: testutil.Context(t)}
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
	if _, err := cl.CoreV1().Namespaces().Create(cl.ctx, ns, metav1.CreateOptions{}); err != nil {
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

// newPod is pod i of ns, with the one container the apiserver requires.
func newPod(ns string, i int) *v1.Pod {
	return testutil.Pod(ns, fmt.Sprintf("pod-%05d", i), "", testutil.Label("app", "e2e"), testutil.Label("shard", fmt.Sprint(i%8)),
		func(p *v1.Pod) {
			p.Spec.Containers = []v1.Container{{
				Name: "main", Image: "registry.invalid/e2e:1",
				Env: []v1.EnvVar{{Name: "INDEX", Value: fmt.Sprint(i)}},
			}}
		})
}

// createParallel calls create(i) for i in [0,n) on createWorkers
// goroutines, with a context carrying t's logger.
func createParallel(t *testing.T, n int, create func(ctx context.Context, i int) error) {
	t.Helper()
	g, ctx := errgroup.WithContext(testutil.Context(t))
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
		cm, err = cl.CoreV1().ConfigMaps(ns).Create(cl.ctx, newConfigMap(ns, i, "v1"), metav1.CreateOptions{})
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
		out, err = cl.CoreV1().ConfigMaps(cm.Namespace).Update(cl.ctx, cm, metav1.UpdateOptions{})
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
		return cl.CoreV1().ConfigMaps(cm.Namespace).Delete(cl.ctx, cm.Name, metav1.DeleteOptions{})
	})
	if err != nil {
		t.Fatalf("delete %s: %v", cm.Name, err)
	}
	m.deleted[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
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
	return startCacheWith(t, cl, path, ns, boltinformer.Options{}, specs...)
}

// startCacheWith is startCache with Options for the Cache (NoSync is set,
// and Logger is t's unless given).
func startCacheWith(t *testing.T, cl *client, path, ns string, opts boltinformer.Options, specs ...informerSpec) *runningCache {
	t.Helper()
	opts.NoSync = true
	if opts.Logger.GetSink() == nil {
		opts.Logger = testutil.Logger(t)
	}
	c, err := boltinformer.Open(path, opts)
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
		boltstoretest.Verify(rc.t, (*boltstore.Store)(ri.Store()))
	}
	if err := rc.cache.Close(); err != nil {
		rc.t.Errorf("close %s: %v", rc.path, err)
	}
	boltstoretest.CheckFile(rc.t, rc.path)
}

// requestCount reads the apiserver's count of verb requests on resource.
func requestCount(t *testing.T, c *testcluster.Cluster, verb, resource string) float64 {
	t.Helper()
	n, err := c.RequestCount(testutil.Context(t), verb, resource)
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
func openReadOnly(t *testing.T, path, name string, example runtime.Object) *boltstore.Store {
	t.Helper()
	logger := testutil.Logger(t)
	st, err := boltstore.Open(path, name, cachefile.Options{ReadOnly: true, Logger: logger}, boltstore.StoreOptions{Object: example, Logger: logger})
	if err != nil {
		t.Fatalf("open %s read-only: %v", path, err)
	}
	return st
}

// tail returns the last 4000 bytes of a process's output.
func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}
