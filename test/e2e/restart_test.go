package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// relistEvents returns the events a diffing relist from the state before
// to the state after must produce: an update for each object whose RV
// changed (old RV from disk), a tombstone for each key gone (carrying the
// stored object), an add for each new key, and nothing for the others.
func relistEvents(before, after map[string]string) []event {
	var out []event
	for k, rv := range after {
		old, ok := before[k]
		switch {
		case !ok:
			out = append(out, event{typ: "add", key: k, rv: rv})
		case old != rv:
			out = append(out, event{typ: "update", key: k, oldRV: old, rv: rv})
		}
	}
	for k, rv := range before {
		if _, ok := after[k]; !ok {
			out = append(out, event{typ: "tombstone", key: k, rv: rv})
		}
	}
	return out
}

// withoutInitial clears the isInInitialList flag of adds: which value a
// relist's adds carry after a warm start is not specified.
func withoutInitial(evs []event) []event {
	out := make([]event, len(evs))
	for i, e := range evs {
		e.initial = false
		out[i] = e
	}
	return out
}

// assertOneRelist fails t unless the informer first tried to resume its
// WATCH from storedRV and then relisted exactly once (a LIST or a
// WatchList stream).
func assertOneRelist(t *testing.T, ri *runningInformer, storedRV string) {
	t.Helper()
	calls := ri.lw.Calls()
	t.Logf("requests: %v", calls)
	if len(calls) < 2 || !calls[0].isResumeCheck() || calls[1].verb != "WATCH" || calls[1].opts.ResourceVersion != storedRV || calls[1].isWatchList() {
		t.Fatalf("requests %v; want the resume check, then a WATCH from the stored RV %s", calls, storedRV)
	}
	if n := ri.lw.count(call.isRelist); n != 1 {
		t.Fatalf("%d relists (LIST or WatchList stream), want exactly 1: %v", n, calls)
	}
}

// TestExpiredRVRelist stops two informers, changes objects (deletes among
// them), and restarts the apiserver, whose watch cache then no longer
// serves their stored RVs: each informer's WATCH gets 410 and it relists
// once, diffing against the file, one through a WatchList stream (client-go's
// default), the other through paged LISTs. Handlers see exactly the
// differences, deletes as cache.DeletedFinalStateUnknown with the stored
// object, and nothing for unchanged objects; the stores equal the apiserver.
func TestExpiredRVRelist(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-expired")
	cms := createConfigMaps(t, cl, ns, 0, 150)
	path := filepath.Join(t.TempDir(), "cache.db")
	const pagedStore, pageSize = "ConfigMap.v1.paged", 40
	specs := func(opts boltinformer.InformerOptions) []informerSpec {
		paged := opts
		paged.StoreName, paged.WatchList, paged.PageSize = pagedStore, reflector.WatchListOff, pageSize
		return []informerSpec{configMapSpec(opts), configMapSpec(paged)}
	}

	startCache(t, cl, path, ns, specs(boltinformer.InformerOptions{})...).stop()
	stored := []storedState{readStore(t, path), readStore(t, path, pagedStore)}
	mutateWhileDown(t, cl, ns, cms, 0, 1000)
	after := rvs(listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}))
	restartAPIServer(t, c, cl)

	// The apiserver accepts each WATCH and sends 410 as its first event: that
	// watch is never established, so HasSynced waits for the relist. The
	// grace is generous because CI runs this on a loaded 2-core machine.
	rc := startCache(t, cl, path, ns, specs(boltinformer.InformerOptions{DisableReplay: true, WatchEstablishedAfter: 3 * time.Second})...)
	for _, ri := range rc.infs {
		if d := diffRVs(after, rvs(storeObjects(ri.Informer))); d != "" {
			t.Fatalf("%s synced before its relist landed: %s", ri.Name(), d)
		}
	}
	sentinel := awaitSentinel(t, cl, ns, 2000, rc.infs[0].rec, rc.infs[1].rec)
	for i, ri := range rc.infs {
		t.Logf("store %s", ri.Name())
		assertOneRelist(t, ri, stored[i].rv)
		assertEvents(t, ri.Name()+": events of the relist", append(relistEvents(stored[i].objects, after), sentinel), withoutInitial(ri.rec.Events()))
		assertSameObjects(t, ri.Name()+": cache vs LIST", listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}), storeObjects(ri.Informer))
	}
	pages := rc.infs[1].lw.count(func(c call) bool { return c.verb == "LIST" && !c.isResumeCheck() })
	if want := (len(after) + pageSize - 1) / pageSize; pages < want || rc.infs[1].lw.count(call.isWatchList) != 0 {
		t.Fatalf("the paged relist of %d objects made %d LISTs, want at least %d pages and no WatchList", len(after), pages, want)
	}
	rc.stop()
}

// TestWatchInterruption restarts the apiserver under a running informer:
// its watch breaks, it recovers on its own (re-watch, 410, relist) and the
// changes made after the restart reach the file and the handlers.
func TestWatchInterruption(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-interrupt")
	cms := createConfigMaps(t, cl, ns, 0, 100)

	rc := startCache(t, cl, filepath.Join(t.TempDir(), "cache.db"), ns, configMapSpec(boltinformer.InformerOptions{}))
	ri := rc.infs[0]
	converged := func() string {
		want := rvs(listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}))
		if d := diffRVs(want, rvs(storeObjects(ri.Informer))); d != "" {
			return "cache: " + d
		}
		if d := diffRVs(want, ri.rec.view()); d != "" {
			return "handler: " + d
		}
		return ""
	}
	before := newMutation()
	for i := 0; i < 5; i++ {
		before.update(t, cl, cms[fmt.Sprintf("%s/%s", ns, cmName(i))], "v2")
	}
	testutil.EventuallyDiff(t, "changes before the restart", convergeTimeout, converged)

	restartAPIServer(t, c, cl)
	m := newMutation()
	var created []*v1.ConfigMap
	for i := 100; i < 103; i++ {
		created = append(created, m.create(t, cl, ns, i))
	}
	for i := 10; i < 13; i++ {
		m.update(t, cl, cms[ns+"/"+cmName(i)], "v2")
	}
	for i := 20; i < 23; i++ {
		m.delete(t, cl, cms[ns+"/"+cmName(i)])
	}
	m.update(t, cl, created[0], "v2")
	testutil.EventuallyDiff(t, "changes after the restart", convergeTimeout, converged)

	for k := range m.created {
		if !ri.rec.seen("add", k, "") {
			t.Errorf("no add of %s", k)
		}
	}
	for k, rvs := range m.updated {
		if !ri.rec.seen("update", k, rvs[len(rvs)-1]) && !ri.rec.seen("add", k, rvs[len(rvs)-1]) {
			t.Errorf("no notification of %s@%s", k, rvs[len(rvs)-1])
		}
	}
	for k := range m.deleted {
		if !ri.rec.seen("delete", k, "") && !ri.rec.seen("tombstone", k, "") {
			t.Errorf("no delete of %s", k)
		}
	}
	t.Logf("requests: %v", ri.lw.Calls())
	if n := ri.lw.watches.Load(); n < 2 {
		t.Errorf("%d watches opened; the restart should have forced another", n)
	}
	assertSameObjects(t, "cache vs LIST", listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}), storeObjects(ri.Informer))
	rc.stop()
}
