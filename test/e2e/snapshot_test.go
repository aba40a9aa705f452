package e2e

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/snapshot"
)

// TestSnapshotRestore snapshots a synced cache while its informer runs
// (snapshot.Save), restores it into fresh files (snapshot.Restore) and
// starts informers on them. While the apiserver still serves the
// snapshot's RV the informer resumes its WATCH from it (no LIST, no
// initial-events stream) and handlers see the replay and then exactly the
// changes made since the snapshot. After an apiserver restart the RV is no
// longer served: the informer relists once, diffing against the restored
// objects, and only the real differences produce events.
func TestSnapshotRestore(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-snapshot")
	cms := createConfigMaps(t, cl, ns, 0, 200)
	dir := t.TempDir()
	snap := filepath.Join(dir, "cache.snap")

	rc := startCache(t, cl, filepath.Join(dir, "live.db"), ns, configMapSpec(boltinformer.InformerOptions{}))
	live := rc.infs[0]
	m := newMutation()
	for i := 100; i < 103; i++ {
		m.update(t, cl, cms[ns+"/"+cmName(i)], "v2")
	}
	testutil.EventuallyDiff(t, "the live cache to converge", convergeTimeout, func() string {
		return diffRVs(rvs(listObjects(t, cl, "configmaps", ns, metav1.ListOptions{})), rvs(storeObjects(live.Informer)))
	})

	liveRV, err := live.Store().ResourceVersion()
	if err != nil {
		t.Fatal(err)
	}
	liveObjects := rvs(storeObjects(live.Informer))
	hdr, err := rc.cache.Snapshot(testutil.Context(t), snap)
	if err != nil {
		t.Fatalf("snapshot a running cache: %v", err)
	}
	if len(hdr.Stores) != 1 || hdr.Stores[0].Name != "ConfigMap.v1" || hdr.Stores[0].Relisting {
		t.Fatalf("snapshot header stores %+v; want ConfigMap.v1, not relisting", hdr.Stores)
	}
	snapRV := hdr.Stores[0].RV
	// Nothing changed in the namespace meanwhile, but a bookmark may have moved the RV.
	if rvAfter, _ := live.Store().ResourceVersion(); rvAfter == liveRV && snapRV != liveRV {
		t.Fatalf("snapshot RV %s, the live store's %s", snapRV, liveRV)
	}
	rc.stop()
	report, err := snapshot.Status(snap)
	if err != nil || !report.ChecksumValid || report.Header.Stores[0].Objects != len(liveObjects) {
		t.Fatalf("snapshot status: %+v, %v; want a valid checksum and %d objects", report, err, len(liveObjects))
	}

	restore := func(t *testing.T, name string) (string, storedState) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name, "cache.db")
		if _, err := snapshot.Restore(snap, path, snapshot.RestoreOptions{NoSync: true}); err != nil {
			t.Fatalf("restore into %s: %v", path, err)
		}
		st := readStore(t, path)
		if st.rv != snapRV || diffRVs(liveObjects, st.objects) != "" {
			t.Fatalf("restored file at RV %s (%s); want the snapshot's RV %s and objects", st.rv, diffRVs(liveObjects, st.objects), snapRV)
		}
		return path, st
	}

	t.Run("fresh RV resumes", func(t *testing.T) {
		m := mutateWhileDown(t, cl, ns, cms, 0, 1000)
		path, st := restore(t, "fresh")
		listsBefore := requestCount(t, c, "LIST", "configmaps")
		rc := startCache(t, cl, path, ns, configMapSpec(boltinformer.InformerOptions{}))
		ri := rc.infs[0]
		sentinel := awaitSentinel(t, cl, ns, 2000, ri.rec)
		if n, checks := requestCount(t, c, "LIST", "configmaps")-listsBefore, ri.lw.count(call.isResumeCheck); n != float64(checks) {
			t.Fatalf("the apiserver counted %v LIST configmaps, want only the %d resume checks (limit=1)", n, checks)
		}
		calls := withoutResumeChecks(ri.lw.Calls())
		t.Logf("requests: %v", ri.lw.Calls())
		if len(calls) == 0 || calls[0].verb != "WATCH" || calls[0].opts.ResourceVersion != snapRV || ri.lw.count(call.isRelist) != 0 {
			t.Fatalf("requests %v; want WATCHes from the snapshot's RV %s and no relist", calls, snapRV)
		}
		evs := ri.rec.Events()
		if len(evs) < len(st.objects) {
			t.Fatalf("handler saw %d events, fewer than the %d restored objects", len(evs), len(st.objects))
		}
		var replay []event
		for k, rv := range st.objects {
			replay = append(replay, event{typ: "add", key: k, rv: rv, initial: true})
		}
		assertEvents(t, "replay of the restored objects", replay, evs[:len(st.objects)])
		assertEvents(t, "changes since the snapshot", append(watchEvents(m), sentinel), withoutDeleteRVs(evs[len(st.objects):]))
		assertSameObjects(t, "cache vs LIST", listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}), storeObjects(ri.Informer))
		rc.stop()
	})

	t.Run("expired RV relists with diffing", func(t *testing.T) {
		mutateWhileDown(t, cl, ns, cms, 20, 1010)
		after := rvs(listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}))
		restartAPIServer(t, c, cl)
		path, st := restore(t, "expired")
		rc := startCache(t, cl, path, ns, configMapSpec(boltinformer.InformerOptions{DisableReplay: true}))
		ri := rc.infs[0]
		sentinel := awaitSentinel(t, cl, ns, 2001, ri.rec)
		assertOneRelist(t, ri, snapRV)
		assertEvents(t, "events of the relist", append(relistEvents(st.objects, after), sentinel), withoutInitial(ri.rec.Events()))
		assertSameObjects(t, "cache vs LIST", listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}), storeObjects(ri.Informer))
		rc.stop()
	})
}
