package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testcluster"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// watchEvents returns the events a watch delivers for m, in the order of
// each key's changes. A DELETED event carries the deletion's RV, which the
// client never sees: deletes are compared without RV (see withoutDeleteRVs).
func watchEvents(m *mutation) []event {
	var out []event
	for k, rv := range m.created {
		out = append(out, event{typ: "add", key: k, rv: rv})
	}
	for k, rvs := range m.updated {
		for i := 1; i < len(rvs); i++ {
			out = append(out, event{typ: "update", key: k, oldRV: rvs[i-1], rv: rvs[i]})
		}
	}
	for k := range m.deleted {
		out = append(out, event{typ: "delete", key: k})
	}
	return out
}

func withoutDeleteRVs(evs []event) []event {
	out := make([]event, len(evs))
	for i, e := range evs {
		if e.typ == "delete" {
			e.rv = ""
		}
		out[i] = e
	}
	return out
}

// mutateWhileDown makes every kind of change to the ConfigMaps of ns in
// cms (key → object, updated in place): creates, single and double
// updates, deletes, an update then a delete, and a create then a delete.
// It changes ConfigMaps base to base+8 and creates firstNew to firstNew+3.
func mutateWhileDown(t *testing.T, cl *client, ns string, cms map[string]*v1.ConfigMap, base, firstNew int) *mutation {
	t.Helper()
	m := newMutation()
	get := func(i int) *v1.ConfigMap {
		i += base
		cm, ok := cms[ns+"/"+cmName(i)]
		if !ok {
			t.Fatalf("no ConfigMap %d", i)
		}
		return cm
	}
	set := func(cm *v1.ConfigMap) { cms[cm.Namespace+"/"+cm.Name] = cm }
	for i := firstNew; i < firstNew+3; i++ {
		set(m.create(t, cl, ns, i))
	}
	for i := 0; i < 3; i++ {
		set(m.update(t, cl, get(i), "v2"))
	}
	for i := 3; i < 5; i++ {
		set(m.update(t, cl, m.update(t, cl, get(i), "v2"), "v3"))
	}
	for i := 5; i < 8; i++ {
		m.delete(t, cl, get(i))
		delete(cms, ns+"/"+cmName(base+i))
	}
	m.delete(t, cl, m.update(t, cl, get(8), "v2"))
	delete(cms, ns+"/"+cmName(base+8))
	m.delete(t, cl, m.create(t, cl, ns, firstNew+3))
	return m
}

// awaitSentinel creates one more ConfigMap and waits until every recorder
// has seen its add. A watch delivers events in RV order, so every event of
// the changes made before it has then been seen: nothing more can be on
// its way.
func awaitSentinel(t *testing.T, cl *client, ns string, i int, recs ...*recorder) event {
	t.Helper()
	cm := newMutation().create(t, cl, ns, i)
	key := ns + "/" + cm.Name
	testutil.EventuallyDiff(t, "the sentinel's add", convergeTimeout, func() string {
		for j, rec := range recs {
			if !rec.seen("add", key, cm.ResourceVersion) {
				return fmt.Sprintf("handler %d: %d events so far", j, len(rec.Events()))
			}
		}
		return ""
	})

	return event{typ: "add", key: key, rv: cm.ResourceVersion}
}

// TestWarmRestart stops an informer gracefully, changes objects, and starts
// it again on the same file: it resumes its WATCH from the stored RV with
// no LIST and no initial-events stream, handlers see the stored objects
// replayed (isInInitialList=true) and then exactly the changes, or only the
// changes with DisableReplay, and the file converges to the apiserver.
func TestWarmRestart(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-warm")
	cms := createConfigMaps(t, cl, ns, 0, 200)
	path := filepath.Join(t.TempDir(), "cache.db")

	rc := startCache(t, cl, path, ns, configMapSpec(boltinformer.InformerOptions{}))
	rc.stop()

	for round, replay := range []bool{true, false} {
		t.Logf("round %d: warm start with replay=%v", round, replay)
		stored := readStore(t, path)
		m := mutateWhileDown(t, cl, ns, cms, 20*round, 1000+10*round)

		listsBefore := requestCount(t, c, "LIST", "configmaps")
		watchesBefore := requestCount(t, c, "WATCH", "configmaps")
		rc := startCache(t, cl, path, ns, configMapSpec(boltinformer.InformerOptions{DisableReplay: !replay}))
		ri := rc.infs[0]
		if ri.startRV != stored.rv {
			t.Fatalf("informer found stored RV %q, the file had %q", ri.startRV, stored.rv)
		}
		sentinel := awaitSentinel(t, cl, ns, 2000+round, ri.rec)
		listsAfter := requestCount(t, c, "LIST", "configmaps")

		// Requests: the resume check (LIST limit=1) before each WATCH, the
		// first WATCH from the stored RV; no other LIST.
		calls := ri.lw.Calls()
		t.Logf("requests: %v", calls)
		if len(calls) < 2 || !calls[0].isResumeCheck() || calls[1].verb != "WATCH" || calls[1].opts.ResourceVersion != stored.rv || calls[1].isWatchList() {
			t.Fatalf("warm start requests %v; want the resume check, then a WATCH from the stored RV %s", calls, stored.rv)
		}
		for _, req := range withoutResumeChecks(calls) {
			if req.verb == "LIST" || req.isWatchList() {
				t.Fatalf("warm start made a relist request: %v (all: %v)", req, calls)
			}
		}
		// The apiserver counts every LIST alike: all it counted must be our checks.
		if checks := ri.lw.count(call.isResumeCheck); listsAfter-listsBefore != float64(checks) {
			t.Fatalf("the apiserver counted %v LIST configmaps during the warm start, want only the %d resume checks (limit=1)", listsAfter-listsBefore, checks)
		}

		// Events: the replay of the stored objects, then exactly the changes.
		evs := ri.rec.Events()
		var replayed []event
		if replay {
			if len(evs) < len(stored.objects) {
				t.Fatalf("handler saw %d events, fewer than the %d stored objects to replay", len(evs), len(stored.objects))
			}
			replayed, evs = evs[:len(stored.objects)], evs[len(stored.objects):]
		}
		var want []event
		for k, rv := range stored.objects {
			if replay {
				want = append(want, event{typ: "add", key: k, rv: rv, initial: true})
			}
		}
		assertEvents(t, "warm replay", want, replayed)
		assertEvents(t, "changes after the warm start", append(watchEvents(m), sentinel), withoutDeleteRVs(evs))

		assertSameObjects(t, "cache vs LIST", listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}), storeObjects(ri.Informer))
		rc.stop()
		awaitWatchCounted(t, c, watchesBefore)
	}
}

// TestWarmRestartLongCatchUp: after more changes while the informer was
// down than the queue takes during the replay, the WATCH's events wait in
// the stream and come after the replay: the handler sees exactly the
// changes, each update with the version before it, and the file converges.
func TestWarmRestartLongCatchUp(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-catchup")
	const stored, updated = 2000, 250 // a replay long enough for more than the 64 events it queues
	cms := createConfigMaps(t, cl, ns, 0, stored)
	path := filepath.Join(t.TempDir(), "cache.db")
	startCache(t, cl, path, ns, configMapSpec(boltinformer.InformerOptions{})).stop()

	m := newMutation()
	for i := range updated {
		key := ns + "/" + cmName(i)
		cms[key] = m.update(t, cl, cms[key], "v2")
	}
	rc := startCache(t, cl, path, ns, configMapSpec(boltinformer.InformerOptions{}))
	defer rc.stop()
	ri := rc.infs[0]
	sentinel := awaitSentinel(t, cl, ns, 5000, ri.rec)
	evs := ri.rec.Events()
	if len(evs) < stored {
		t.Fatalf("handler saw %d events, fewer than the %d stored objects to replay", len(evs), stored)
	}
	for i, e := range evs[:stored] {
		if e.typ != "add" || !e.initial {
			t.Fatalf("event %d of the replay is %+v, want an initial add", i, e)
		}
	}
	assertEvents(t, "changes after the warm start", append(watchEvents(m), sentinel), evs[stored:])
	assertSameObjects(t, "cache vs LIST", listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}), storeObjects(ri.Informer))
}

// awaitWatchCounted waits until the apiserver has counted a WATCH on
// configmaps since before (it counts a WATCH when it ends).
func awaitWatchCounted(t *testing.T, c *testcluster.Cluster, before float64) {
	t.Helper()
	testutil.EventuallyDiff(t, "the apiserver to count the WATCH", 30*time.Second, func() string {
		if n := requestCount(t, c, "WATCH", "configmaps"); n <= before {
			return fmt.Sprintf("WATCH configmaps count still %v", n)
		}
		return ""
	})

}

// storedState is what a closed cache file holds for ConfigMaps.
type storedState struct {
	rv      string
	objects map[string]string // key → RV
}

// readStore opens the closed file at path read-only and reads the RV and
// objects of its ConfigMap store, named name or by default "ConfigMap.v1".
func readStore(t *testing.T, path string, name ...string) storedState {
	t.Helper()
	store := "ConfigMap.v1"
	if len(name) > 0 {
		store = name[0]
	}
	st := openReadOnly(t, path, store, &v1.ConfigMap{})
	defer st.Close()
	rv, err := st.ResourceVersion()
	if err != nil {
		t.Fatal(err)
	}
	out := storedState{rv: rv, objects: map[string]string{}}
	if err := st.ForEach(func(obj interface{}) error {
		out.objects[keyOf(obj)] = testutil.RVOf(obj)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if rv == "" {
		t.Fatalf("%s has no stored RV", path)
	}
	return out
}
