package boltstore_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

var (
	namespaces = []string{"default", "kube-system", "team-a"}
	nodes      = []string{"", "node-1", "node-2", "node-3"}
	apps       = []string{"web", "db", "cache"}
)

func randomPod(r *rand.Rand, rv *int) *v1.Pod {
	*rv++
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       namespaces[r.Intn(len(namespaces))],
			Name:            fmt.Sprintf("pod-%d", r.Intn(40)),
			ResourceVersion: strconv.Itoa(*rv),
			UID:             types.UID(fmt.Sprintf("uid-%d", r.Int())),
			Labels:          map[string]string{},
		},
		Spec: v1.PodSpec{NodeName: nodes[r.Intn(len(nodes))]},
	}
	for i := r.Intn(3); i > 0; i-- {
		p.Labels["app"] = apps[r.Intn(len(apps))]
	}
	if r.Intn(2) == 0 {
		p.Labels["tier"] = strconv.Itoa(r.Intn(3))
	}
	return p
}

// TestDifferentialAgainstClientGo applies the same random operations to a
// Store and to client-go's in-memory indexer and compares every read.
func TestDifferentialAgainstClientGo(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			runDifferential(t, seed, 3500)
		})
	}
}

func runDifferential(t *testing.T, seed int64, steps int) {
	r := rand.New(rand.NewSource(seed))
	ours := boltstoretest.Open(t, "pods", boltstore.StoreOptions{Object: &v1.Pod{}, Indexers: testutil.PodIndexers()})
	theirs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, testutil.PodIndexers())
	rv := 0
	var live []*v1.Pod // objects recently written, for Update/Delete/Index
	extra := 0
	for step := 0; step < steps; step++ {
		what := r.Intn(100)
		var desc string
		switch {
		case what < 35:
			p := randomPod(r, &rv)
			desc = "Add " + p.Namespace + "/" + p.Name
			compareErr(t, desc, ours.Add(p), theirs.Add(p.DeepCopy()))
			live = append(live, p)
		case what < 60 && len(live) > 0:
			old := live[r.Intn(len(live))]
			p := randomPod(r, &rv)
			p.Namespace, p.Name = old.Namespace, old.Name
			desc = "Update " + p.Namespace + "/" + p.Name
			compareErr(t, desc, ours.Update(p), theirs.Update(p.DeepCopy()))
			live = append(live, p)
		case what < 78 && len(live) > 0:
			p := live[r.Intn(len(live))]
			var obj interface{} = p
			if r.Intn(3) == 0 { // delete by a bare key, as client-go allows
				key, _ := cache.MetaNamespaceKeyFunc(p)
				obj = cache.ExplicitKey(key)
			}
			desc = fmt.Sprintf("Delete %v", obj)
			compareErr(t, desc, ours.Delete(obj), theirs.Delete(obj))
		case what < 81:
			var list []interface{}
			var list2 []interface{}
			for i := r.Intn(30); i > 0; i-- {
				p := randomPod(r, &rv)
				list, list2 = append(list, p), append(list2, p.DeepCopy())
				live = append(live, p)
			}
			rv++
			desc = fmt.Sprintf("Replace %d at %d", len(list), rv)
			compareErr(t, desc, ours.Replace(list, strconv.Itoa(rv)), theirs.Replace(list2, strconv.Itoa(rv)))
		case what < 84:
			rv++
			desc = fmt.Sprintf("Bookmark %d", rv)
			ours.Bookmark(strconv.Itoa(rv))
			theirs.Bookmark(strconv.Itoa(rv))
		case what < 85:
			extra++
			name := fmt.Sprintf("extra-%d", extra)
			f := func(obj interface{}) ([]string, error) {
				return []string{obj.(*v1.Pod).Labels["tier"]}, nil
			}
			desc = "AddIndexers " + name
			compareErr(t, desc, ours.AddIndexers(cache.Indexers{name: f}), theirs.AddIndexers(cache.Indexers{name: f}))
			// A conflicting name must fail on both.
			compareErr(t, desc+" (conflict)", ours.AddIndexers(cache.Indexers{"node": f}), theirs.AddIndexers(cache.Indexers{"node": f}))
		case what < 87:
			desc = "Add object without metadata"
			compareErr(t, desc, ours.Add("not an object"), theirs.Add("not an object"))
		default:
			desc = "Resync"
			compareErr(t, desc, ours.Resync(), theirs.Resync())
		}
		if len(live) > 200 {
			live = live[100:]
		}
		compareStores(t, r, fmt.Sprintf("seed step %d (%s)", step, desc), ours, theirs, live, step%10 == 0, step%50 == 0)
		if t.Failed() {
			t.FailNow()
		}
	}
}

func compareErr(t *testing.T, what string, ours, theirs error) {
	t.Helper()
	if (ours == nil) != (theirs == nil) {
		t.Fatalf("%s: ours returned %v, client-go %v", what, ours, theirs)
	}
}

func sortedKeys(objs []interface{}) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		k, _ := cache.MetaNamespaceKeyFunc(o)
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortStrings(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

func compareObjects(t *testing.T, what string, ours, theirs []interface{}) {
	t.Helper()
	if a, b := sortedKeys(ours), sortedKeys(theirs); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("%s: keys differ:\n ours   %v\n client %v", what, a, b)
	}
	byKey := map[string]interface{}{}
	for _, o := range theirs {
		k, _ := cache.MetaNamespaceKeyFunc(o)
		byKey[k] = o
	}
	for _, o := range ours {
		k, _ := cache.MetaNamespaceKeyFunc(o)
		if !samePod(o, byKey[k]) {
			t.Fatalf("%s: object %s differs:\n ours   %#v\n client %#v", what, k, o, byKey[k])
		}
	}
}

// samePod compares two Pods by their deterministic protobuf encoding (map
// keys sorted), which is exact and much cheaper than a reflective comparison.
func samePod(a, b interface{}) bool {
	pa, okA := a.(*v1.Pod)
	pb, okB := b.(*v1.Pod)
	if !okA || !okB {
		return apiequality.Semantic.DeepEqual(a, b)
	}
	ba, errA := pa.Marshal()
	bb, errB := pb.Marshal()
	return errA == nil && errB == nil && pa.TypeMeta == pb.TypeMeta && bytes.Equal(ba, bb)
}

func compareStores(t *testing.T, r *rand.Rand, what string, ours *boltstore.Store, theirs cache.Indexer, live []*v1.Pod, indexes, full bool) {
	t.Helper()
	if a, b := sortStrings(ours.ListKeys()), sortStrings(theirs.ListKeys()); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("%s: ListKeys differ:\n ours   %v\n client %v", what, a, b)
	}
	if a, b := ours.LastStoreSyncResourceVersion(), theirs.LastStoreSyncResourceVersion(); a != b {
		t.Fatalf("%s: LastStoreSyncResourceVersion ours %q client %q", what, a, b)
	}
	if n, err := ours.Len(); err != nil || n != len(theirs.ListKeys()) {
		t.Fatalf("%s: Len %d (%v), client-go has %d", what, n, err, len(theirs.ListKeys()))
	}
	if a, b := sortedIndexerNames(ours.GetIndexers()), sortedIndexerNames(theirs.GetIndexers()); a != b {
		t.Fatalf("%s: GetIndexers ours %s client %s", what, a, b)
	}
	for name := range theirs.GetIndexers() {
		if !indexes {
			break
		}
		values := sortStrings(theirs.ListIndexFuncValues(name))
		if a := sortStrings(ours.ListIndexFuncValues(name)); strings.Join(a, ",") != strings.Join(values, ",") {
			t.Fatalf("%s: ListIndexFuncValues(%s) ours %q client %q", what, name, a, values)
		}
		for _, v := range append(values, "no-such-value") {
			a, errA := ours.IndexKeys(name, v)
			b, errB := theirs.IndexKeys(name, v)
			compareErr(t, what+" IndexKeys", errA, errB)
			if strings.Join(sortStrings(a), ",") != strings.Join(sortStrings(b), ",") {
				t.Fatalf("%s: IndexKeys(%s, %q) ours %v client %v", what, name, v, a, b)
			}
		}
		if full && len(values) > 0 {
			v := values[r.Intn(len(values))]
			a, errA := ours.ByIndex(name, v)
			b, errB := theirs.ByIndex(name, v)
			compareErr(t, what+" ByIndex", errA, errB)
			compareObjects(t, fmt.Sprintf("%s ByIndex(%s,%q)", what, name, v), a, b)
		}
		if full && len(live) > 0 {
			probe := live[r.Intn(len(live))]
			a, errA := ours.Index(name, probe)
			b, errB := theirs.Index(name, probe)
			compareErr(t, what+" Index", errA, errB)
			compareObjects(t, fmt.Sprintf("%s Index(%s)", what, name), a, b)
		}
	}
	_, errA := ours.ByIndex("no-such-index", "x")
	_, errB := theirs.ByIndex("no-such-index", "x")
	compareErr(t, what+" ByIndex unknown", errA, errB)
	_, errA = ours.IndexKeys("no-such-index", "x")
	_, errB = theirs.IndexKeys("no-such-index", "x")
	compareErr(t, what+" IndexKeys unknown", errA, errB)
	_, errA = ours.Index("no-such-index", &v1.Pod{})
	_, errB = theirs.Index("no-such-index", &v1.Pod{})
	compareErr(t, what+" Index unknown", errA, errB)
	if len(live) > 0 {
		p := live[r.Intn(len(live))]
		a, okA, errA := ours.Get(p)
		b, okB, errB := theirs.Get(p)
		compareErr(t, what+" Get", errA, errB)
		if okA != okB || (okA && !samePod(a, b)) {
			t.Fatalf("%s: Get(%s/%s) ours (%v, %v) client (%v, %v)", what, p.Namespace, p.Name, a, okA, b, okB)
		}
	}
	if full {
		compareObjects(t, what+" List", ours.List(), theirs.List())
	}
}

func sortedIndexerNames(ix cache.Indexers) string {
	var names []string
	for n := range ix {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
