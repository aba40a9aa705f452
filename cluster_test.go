package boltinformer_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// fakeCluster is one cluster as an informer sees it: a ListerWatcher that
// serves a fixed list at a fixed RV (and honors Limit, as the apiserver
// does) and a watch that stays quiet, recording every request; and a
// clientset whose kube-system namespace has the cluster's UID.
type fakeCluster struct {
	uid       string
	rv        string
	pods      []v1.Pod
	clientset *fake.Clientset

	mu    sync.Mutex
	calls []string
}

func newFakeCluster(uid, rv string, pods ...*v1.Pod) *fakeCluster {
	f := &fakeCluster{uid: uid, rv: rv}
	for _, p := range pods {
		f.pods = append(f.pods, *p)
	}
	f.clientset = fake.NewClientset(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem, UID: types.UID(uid)}})
	return f
}

func (f *fakeCluster) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

// requests returns the requests so far, as `LIST rv="" limit=N` and `WATCH rv="X"`.
func (f *fakeCluster) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeCluster) ListWithContext(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	f.record(fmt.Sprintf("LIST rv=%q limit=%d", o.ResourceVersion, o.Limit))
	l := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: f.rv}, Items: slices.Clone(f.pods)}
	if o.Limit > 0 && int(o.Limit) < len(l.Items) {
		l.Items, l.Continue = l.Items[:o.Limit], "more" // the probe never continues
	}
	return l, nil
}

func (f *fakeCluster) WatchWithContext(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	f.record(fmt.Sprintf("WATCH rv=%q", o.ResourceVersion))
	return watch.NewRaceFreeFake(), nil
}

func (f *fakeCluster) List(o metav1.ListOptions) (runtime.Object, error) {
	return f.ListWithContext(context.Background(), o)
}

func (f *fakeCluster) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return f.WatchWithContext(context.Background(), o)
}

// runOn starts an informer on path against cl, waits for HasSynced and
// returns it, its recorder, the metrics registry and a stop function.
func runOn(t *testing.T, path string, cl *fakeCluster, withIdentity bool) (*boltinformer.Informer, *recorder, *prometheus.Registry, func()) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	opts := boltinformer.Options{Logger: testutil.Logger(t), NoSync: true, Registerer: reg}
	if withIdentity {
		opts.ClusterIdentity = boltinformer.KubeSystemUID(cl.clientset.CoreV1())
	}
	c, err := boltinformer.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(cl, &v1.Pod{}, boltinformer.InformerOptions{
		WatchList: reflector.WatchListOff, Indexers: cache.Indexers{"node": nodeIndex},
		WatchEstablishedAfter: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	h, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	stop := func() {
		cancel()
		<-done
		boltstoretest.Verify(t, (*boltstore.Store)(inf.Store()))
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		boltstoretest.CheckFile(t, path)
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced, h.HasSynced) {
		stop()
		t.Fatalf("informer did not sync; requests %v", cl.requests())
	}
	return inf, rec, reg, stop
}

// awaitRequests waits until cl has been asked exactly want, in order.
func awaitRequests(t *testing.T, what string, cl *fakeCluster, want ...string) {
	t.Helper()
	testutil.EventuallyDiff(t, what, waitTimeout, func() string {
		if got := cl.requests(); !slices.Equal(got, want) {
			return fmt.Sprintf("%v, want %v", got, want)
		}
		return ""
	})
}

func nodeIndex(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Spec.NodeName}, nil }

// relistReasons reads relists_total by reason, leaving out the reasons at
// zero (every reason's counter exists from the start).
func relistReasons(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range gather(t, reg)["boltinformer_relists_total"] {
		for _, l := range m.Label {
			if l.GetName() == "reason" && m.GetCounter().GetValue() != 0 {
				out[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// storeContent maps each stored key to RV, UID and node.
func storeContent(inf *boltinformer.Informer) map[string]string {
	out := map[string]string{}
	for _, o := range inf.GetStore().List() {
		p := o.(*v1.Pod)
		out[p.Namespace+"/"+p.Name] = fmt.Sprintf("%s/%s/%s", p.ResourceVersion, p.UID, p.Spec.NodeName)
	}
	return out
}

func clusterContent(cl *fakeCluster) map[string]string {
	out := map[string]string{}
	for _, p := range cl.pods {
		out[p.Namespace+"/"+p.Name] = fmt.Sprintf("%s/%s/%s", p.ResourceVersion, p.UID, p.Spec.NodeName)
	}
	return out
}

// twoClusters: a busy cluster A at RV 900 and a fresh cluster B at RV 40
// with fewer objects, one of them with A's key (and another UID).
func twoClusters() (a, b *fakeCluster) {
	a = newFakeCluster("uid-a", "900",
		testutil.Pod("ns", "p1", "880", testutil.Label("app", "p1"), testutil.Node("n1"), testutil.UID("a-p1")), testutil.Pod("ns", "p2", "890", testutil.Label("app", "p2"), testutil.Node("n1"), testutil.UID("a-p2")), testutil.Pod("ns", "p3", "900", testutil.Label("app", "p3"), testutil.Node("n2"), testutil.UID("a-p3")))
	b = newFakeCluster("uid-b", "40",
		testutil.Pod("ns", "p1", "30", testutil.Label("app", "p1"), testutil.Node("n7"), testutil.UID("b-p1")), testutil.Pod("ns", "q", "40", testutil.Label("app", "q"), testutil.Node("n7"), testutil.UID("b-q")))
	return a, b
}

// TestClusterChangedEmptiesTheStoreAndRelists: with ClusterIdentity, a file
// synced on cluster A and started on cluster B is emptied before anything
// is replayed and relisted (reason cluster_changed) with no resume check and
// no WATCH from A's RV; the next start on B is a warm one (probe, WATCH).
func TestClusterChangedEmptiesTheStoreAndRelists(t *testing.T) {
	a, b := twoClusters()
	path := filepath.Join(t.TempDir(), "c.db")
	_, _, _, stop := runOn(t, path, a, true)
	stop()

	inf, rec, reg, stop := runOn(t, path, b, true)
	// A relist syncs when the queue has applied it, whether or not the
	// reflector has asked for its WATCH yet.
	awaitRequests(t, "requests on cluster B", b, fmt.Sprintf(`LIST rv="" limit=%d`, listwatcher.DefaultPageSize), `WATCH rv="40"`)
	if got := clusterContent(b); !maps.Equal(storeContent(inf), got) {
		t.Fatalf("store %v, cluster B %v", storeContent(inf), got)
	}
	want := []string{`ns/p1 add@30 initial=true`, `ns/q add@40 initial=true`}
	if got := rec.snapshot(); !sameEvents(got, want) {
		t.Fatalf("handler saw %v, want only B's objects as initial adds %v", got, want)
	}
	if r := relistReasons(t, reg); r[string(listwatcher.RelistClusterChanged)] != 1 || len(r) != 1 {
		t.Fatalf("relists_total %v, want one %s", r, listwatcher.RelistClusterChanged)
	}
	if keys, _ := inf.GetIndexer().IndexKeys("node", "n1"); len(keys) != 0 {
		t.Fatalf("cluster A's index entries survived: %v", keys)
	}
	stop()

	b.calls = nil
	_, _, reg, stop = runOn(t, path, b, true)
	defer stop()
	if want := []string{`LIST rv="" limit=1`, `WATCH rv="40"`}; !slices.Equal(b.requests(), want) {
		t.Fatalf("warm start on the same cluster: requests %v, want %v", b.requests(), want)
	}
	if r := relistReasons(t, reg); len(r) != 0 {
		t.Fatalf("warm start relisted: %v", r)
	}
}

// TestRVAheadRelistsAndDiffs: without ClusterIdentity, a stored RV ahead of
// the cluster's is caught by the resume check (LIST limit=1): the informer
// relists (reason rv_ahead_of_cluster) instead of watching, and the diff
// brings the store and the handlers to cluster B, also for the object
// whose key A had. HasSynced waits for the relist: its adds are initial.
func TestRVAheadRelistsAndDiffs(t *testing.T) {
	a, b := twoClusters()
	path := filepath.Join(t.TempDir(), "c.db")
	_, _, _, stop := runOn(t, path, a, false)
	stop()

	inf, rec, reg, stop := runOn(t, path, b, false)
	defer stop()
	awaitRequests(t, "requests on cluster B", b, `LIST rv="" limit=1`, fmt.Sprintf(`LIST rv="" limit=%d`, listwatcher.DefaultPageSize), `WATCH rv="40"`)
	if got := clusterContent(b); !maps.Equal(storeContent(inf), got) {
		t.Fatalf("store %v, cluster B %v", storeContent(inf), got)
	}
	if r := relistReasons(t, reg); r[string(listwatcher.RelistRVAhead)] != 1 || len(r) != 1 {
		t.Fatalf("relists_total %v, want one %s", r, listwatcher.RelistRVAhead)
	}
	want := []string{
		`ns/p1 add@880 initial=true`, `ns/p2 add@890 initial=true`, `ns/p3 add@900 initial=true`, // the replay
		`ns/p1 update@880->30`, `ns/q add@40 initial=true`, `ns/p2 delete(tombstone)`, `ns/p3 delete(tombstone)`,
	}
	// The handler's HasSynced counts its initial adds only: the relist's
	// deletes may still be on their way to it.
	testutil.EventuallyDiff(t, "the handler to see the relist", waitTimeout, func() string {
		if got := rec.snapshot(); !sameEvents(got, want) {
			return fmt.Sprintf("handler saw %v, want %v", got, want)
		}
		return ""
	})
}

func sameEvents(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}
