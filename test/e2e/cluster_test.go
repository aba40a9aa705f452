package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/internal/testcluster"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// startFreshCluster starts, in the background, a cluster of its own: a new
// etcd data directory and new ports. What carries over between clusters in
// these tests is the cache file, not the address.
func startFreshCluster(t *testing.T) func() *testcluster.Cluster {
	t.Helper()
	type result struct {
		c   *testcluster.Cluster
		err error
	}
	ch := make(chan result, 1)
	dir := t.TempDir()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		c, err := testcluster.Start(ctx, testcluster.Options{Dir: dir})
		ch <- result{c, err}
	}()
	return func() *testcluster.Cluster {
		t.Helper()
		r := <-ch
		if r.err != nil {
			t.Fatalf("start a fresh cluster: %v", r.err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				for _, name := range []testcluster.ProcessName{testcluster.APIServer, testcluster.Etcd} {
					t.Logf("fresh cluster: tail of %s:\n%s", r.c.LogPath(name), fileTail(r.c.LogPath(name), 4<<10))
				}
			}
			if err := r.c.Stop(); err != nil {
				t.Errorf("stop the fresh cluster: %v", err)
			}
		})
		return r.c
	}
}

// clusterRV is the cluster's current RV: the list RV of a consistent LIST
// with limit=1.
func clusterRV(t *testing.T, cl *client, ns string) uint64 {
	t.Helper()
	var l *v1.ConfigMapList
	err := retry(func() (err error) {
		l, err = cl.CoreV1().ConfigMaps(ns).List(cl.ctx, metav1.ListOptions{Limit: 1})
		return err
	})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("list RV %q: %v", l.ResourceVersion, err)
	}
	return rv
}

func mustRV(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("RV %q: %v", rv, err)
	}
	return n
}

// churnUntil patches the ConfigMaps [0,n) of ns until the cluster's RV passes min.
func churnUntil(t *testing.T, cl *client, ns string, n int, min uint64) {
	t.Helper()
	for round := 0; clusterRV(t, cl, ns) <= min; round++ {
		createParallel(t, 100, func(ctx context.Context, i int) error {
			patch := fmt.Sprintf(`{"data":{"version":"churn-%d-%d"}}`, round, i)
			_, err := cl.CoreV1().ConfigMaps(ns).Patch(ctx, cmName(i%n), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		})
	}
}

func kubeSystemUID(t *testing.T, cl *client) string {
	t.Helper()
	id, err := boltinformer.KubeSystemUID(cl.CoreV1())(cl.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestClusterReplaced moves a cache file between two clusters
// (docs/design.md, invariant 8): the shared one ("busy") and a fresh one on
// a new etcd data directory ("fresh") that holds fewer objects at lower RVs,
// some with the busy cluster's keys. The namespace has the same name on
// both, so the store's identity (type, namespace, selectors) is the same.
//
//   - RV ahead: a file synced on the busy cluster, started without a
//     ClusterIdentity on the fresh one, would WATCH from an RV the fresh
//     apiserver accepts and never serves. The resume check (LIST limit=1)
//     sees the stored RV ahead, the informer relists, and at HasSynced the
//     cache equals the fresh cluster; new objects arrive.
//   - Cluster changed: a file synced on the fresh cluster, started with
//     ClusterIdentity on the busy one, whose RV is higher than the stored
//     one. The RV check would let that WATCH through; the identity (the
//     kube-system UID) catches it first: the store is emptied before any
//     replay and relisted, with no resume check and no WATCH from the
//     stored RV.
func TestClusterReplaced(t *testing.T) {
	freshCluster := startFreshCluster(t)
	busy := sharedCluster(t)
	clBusy := newClient(t, busy)
	ns := newNamespace(t, clBusy, "e2e-cluster")
	const busyObjects, freshObjects = 60, 10
	createConfigMaps(t, clBusy, ns, 0, busyObjects)

	fresh := freshCluster()
	clFresh := newClient(t, fresh)
	if _, err := clFresh.CoreV1().Namespaces().Create(clFresh.ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s on the fresh cluster: %v", ns, err)
	}
	createConfigMaps(t, clFresh, ns, 0, freshObjects)
	createConfigMaps(t, clFresh, ns, 500, 502)
	// The busy cluster's RV must be well ahead of the fresh one's, whatever
	// ran on the shared cluster before.
	churnUntil(t, clBusy, ns, busyObjects, clusterRV(t, clFresh, ns)+300)
	if kubeSystemUID(t, clBusy) == kubeSystemUID(t, clFresh) {
		t.Fatal("both clusters have the same kube-system UID")
	}
	spec := configMapSpec(boltinformer.InformerOptions{})

	t.Run("rv ahead without identity", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cache.db")
		startCache(t, clBusy, path, ns, spec).stop()
		stored := readStore(t, path)
		if now := clusterRV(t, clFresh, ns); mustRV(t, stored.rv) <= now {
			t.Fatalf("stored RV %s is not ahead of the fresh cluster's %d", stored.rv, now)
		}

		rc := startCache(t, clFresh, path, ns, spec)
		ri := rc.infs[0]
		// At HasSynced the cache already equals the fresh cluster.
		assertSameObjects(t, "cache at HasSynced vs the fresh cluster", listObjects(t, clFresh, "configmaps", ns, metav1.ListOptions{}), storeObjects(ri.Informer))
		calls := ri.lw.Calls()
		t.Logf("requests: %v", calls)
		if len(calls) < 2 || !calls[0].isResumeCheck() || calls[1].verb == "WATCH" && !calls[1].isWatchList() {
			t.Fatalf("requests %v; want the resume check, then a relist", calls)
		}
		if n := ri.lw.count(call.isRelist); n != 1 {
			t.Fatalf("%d relists, want 1: %v", n, calls)
		}
		if n := ri.lw.count(func(c call) bool { return c.verb == "WATCH" && c.opts.ResourceVersion == stored.rv }); n != 0 {
			t.Fatalf("watched from the stored RV %s, which the fresh cluster has not reached: %v", stored.rv, calls)
		}
		// New objects arrive (before the fix, the WATCH from the stored RV sent nothing).
		awaitSentinel(t, clFresh, ns, 2000, ri.rec)
		assertSameObjects(t, "cache vs the fresh cluster", listObjects(t, clFresh, "configmaps", ns, metav1.ListOptions{}), storeObjects(ri.Informer))
		rc.stop()
		if got := readStore(t, path); mustRV(t, got.rv) > clusterRV(t, clFresh, ns) {
			t.Fatalf("stored RV %s is still ahead of the fresh cluster", got.rv)
		}
	})

	t.Run("other cluster with a higher RV", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cache.db")
		freshOpts := boltinformer.Options{ClusterIdentity: boltinformer.KubeSystemUID(clFresh.CoreV1())}
		startCacheWith(t, clFresh, path, ns, freshOpts, spec).stop()
		stored := readStore(t, path)
		if now := clusterRV(t, clBusy, ns); mustRV(t, stored.rv) >= now {
			t.Fatalf("the busy cluster's RV %d is not ahead of the stored %s", now, stored.rv)
		}

		reg := prometheus.NewRegistry()
		busyOpts := boltinformer.Options{ClusterIdentity: boltinformer.KubeSystemUID(clBusy.CoreV1()), Registerer: reg}
		rc := startCacheWith(t, clBusy, path, ns, busyOpts, spec)
		ri := rc.infs[0]
		want := listObjects(t, clBusy, "configmaps", ns, metav1.ListOptions{})
		assertSameObjects(t, "cache at HasSynced vs the busy cluster", want, storeObjects(ri.Informer))
		calls := ri.lw.Calls()
		t.Logf("requests: %v", calls)
		if len(calls) == 0 || !calls[0].isRelist() || ri.lw.count(call.isResumeCheck) != 0 || ri.lw.count(call.isRelist) != 1 {
			t.Fatalf("requests %v; want one relist first and no resume check", calls)
		}
		if n := ri.lw.count(func(c call) bool { return c.verb == "WATCH" && c.opts.ResourceVersion == stored.rv }); n != 0 {
			t.Fatalf("watched the busy cluster from the fresh one's RV %s: %v", stored.rv, calls)
		}
		if got := counterValue(t, reg, "boltinformer_relists_total", "reason", string(listwatcher.RelistClusterChanged)); got != 1 {
			t.Fatalf("relists_total{reason=%q} = %v, want 1", listwatcher.RelistClusterChanged, got)
		}
		// The store was emptied before the replay: handlers saw only the busy
		// cluster's objects, as adds.
		for _, e := range ri.rec.Events() {
			if e.typ != "add" || testutil.RVOf(want[e.key]) != e.rv {
				t.Fatalf("handler saw %v, which is not an add of the busy cluster's object", e)
			}
		}
		if d := diffRVs(rvs(want), ri.rec.view()); d != "" {
			t.Fatalf("handler's view vs the busy cluster: %s", d)
		}
		if id, err := (*boltstore.Store)(ri.Store()).Cluster(); err != nil || id != kubeSystemUID(t, clBusy) {
			t.Fatalf("store's cluster %q, %v; want the busy cluster's kube-system UID", id, err)
		}
		awaitSentinel(t, clBusy, ns, 2001, ri.rec)
		rc.stop()
	})
}

// counterValue reads one series of a counter from reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
