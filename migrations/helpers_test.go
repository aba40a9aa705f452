package migrations_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/migrations"
	"github.com/boltinformer/boltinformer/migrations/migrationstest"
)

// fixedNow is the clock of every migration in these tests.
var fixedNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func nodeIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"zone": func(obj interface{}) ([]string, error) {
			return []string{obj.(*v1.Node).Labels["zone"]}, nil
		},
	}
}

func crIndexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}

// pods returns n pods with resourceVersions base+1 … base+n; every fifth
// has no app label, so none-or-app has no values for it.
func pods(n, base int) []runtime.Object {
	out := make([]runtime.Object, 0, n)
	for i := 0; i < n; i++ {
		labels := map[string]string{"tier": strconv.Itoa(i % 3)}
		if i%5 != 0 {
			labels["app"] = "app-" + strconv.Itoa(i%11)
		}
		var annotations map[string]string
		if i%2 == 0 {
			// Large enough to be compressed from schema v3 on.
			annotations = map[string]string{"note": strings.Repeat("pod "+strconv.Itoa(i)+" of the fixture; ", 20)}
		}
		out = append(out, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns-" + strconv.Itoa(i%4), Name: fmt.Sprintf("pod-%05d", i),
				ResourceVersion: strconv.Itoa(base + i + 1), UID: types.UID("uid-" + strconv.Itoa(i)), Labels: labels,
				Annotations: annotations,
			},
			Spec: v1.PodSpec{
				NodeName:   "node-" + strconv.Itoa(i%7),
				Containers: []v1.Container{{Name: "c", Image: "registry.example/app:" + strconv.Itoa(i)}},
			},
		})
	}
	return out
}

func nodes(n int) []runtime.Object {
	out := make([]runtime.Object, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, &v1.Node{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), ResourceVersion: strconv.Itoa(500 + i), Labels: map[string]string{"zone": "z" + strconv.Itoa(i%2)}},
		})
	}
	return out
}

func customResources(n int) []runtime.Object {
	out := make([]runtime.Object, 0, n)
	for i := 0; i < n; i++ {
		u := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"namespace": "ns-" + strconv.Itoa(i%2), "name": fmt.Sprintf("w-%d", i), "resourceVersion": strconv.Itoa(900 + i)},
			"spec":     map[string]interface{}{"size": int64(i), "ratio": 0.5},
		}}
		out = append(out, u)
	}
	return out
}

// v0Stores is the fixture most tests start from: three stores, one per codec.
func v0Stores(nPods int) []migrationstest.V0Store {
	return []migrationstest.V0Store{
		{Name: "pods", RV: strconv.Itoa(nPods), Objects: pods(nPods, 0), Indexers: testutil.PodIndexers()},
		{Name: "nodes", RV: "600", Objects: nodes(5), Indexers: nodeIndexers()},
		{Name: "widgets", Objects: customResources(4), Indexers: crIndexers()},
	}
}

type storeSpec struct {
	name     string
	example  runtime.Object
	indexers cache.Indexers
	rv       string
	objects  []runtime.Object
}

func specs(stores []migrationstest.V0Store) []storeSpec {
	out := make([]storeSpec, 0, len(stores))
	for _, s := range stores {
		var ex runtime.Object
		switch s.Objects[0].(type) {
		case *v1.Pod:
			ex = &v1.Pod{}
		case *v1.Node:
			ex = &v1.Node{}
		default:
			ex = &unstructured.Unstructured{}
		}
		out = append(out, storeSpec{name: s.Name, example: ex, indexers: s.Indexers, rv: s.RV, objects: s.Objects})
	}
	return out
}

func writeV0(t testing.TB, path string, stores ...migrationstest.V0Store) {
	t.Helper()
	if err := migrationstest.WriteV0(path, stores...); err != nil {
		t.Fatal(err)
	}
}

// verifyV1 opens path with boltstore, checks every store with its
// IndexFuncs (Store.Verify and CheckTx) and compares its content with want.
func verifyV1(t testing.TB, path string, want []storeSpec) {
	t.Helper()
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatalf("open migrated file: %v", err)
	}
	defer db.Close()
	for _, sp := range want {
		s, err := boltstore.New(db, sp.name, boltstore.StoreOptions{Object: sp.example, Indexers: sp.indexers})
		if err != nil {
			t.Fatalf("store %s: %v", sp.name, err)
		}
		if r := s.OpenReport(); len(r.RebuiltIndexes)+len(r.DroppedIndexes) > 0 || r.Reset {
			t.Errorf("store %s: opening the migrated file changed it: %+v", sp.name, r)
		}
		if err := s.Verify(); err != nil {
			t.Errorf("store %s: %v", sp.name, err)
		}
		if rv := s.LastStoreSyncResourceVersion(); rv != sp.rv {
			t.Errorf("store %s: rv %q, want %q", sp.name, rv, sp.rv)
		}
		if n, _ := s.Len(); n != len(sp.objects) {
			t.Errorf("store %s: %d objects, want %d", sp.name, n, len(sp.objects))
		}
		for _, o := range sp.objects {
			got, ok, err := s.Get(o)
			if err != nil || !ok {
				t.Fatalf("store %s: get %v: %v %v", sp.name, o, ok, err)
			}
			if !apiequality.Semantic.DeepEqual(got, o) {
				t.Fatalf("store %s: object differs after migration:\n got %#v\nwant %#v", sp.name, got, o)
			}
		}
	}
	err = db.View(func(tx *bolt.Tx) error {
		for _, p := range cachefile.CheckTx(tx, cachefile.CheckOptions{}) {
			t.Errorf("check: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// leftovers lists the work files next to path.
func leftovers(t testing.TB, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + ".*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func u64(v uint64) *uint64 { return &v }

func toInterfaces(objs []runtime.Object) []interface{} {
	out := make([]interface{}, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// listPage makes a relist page of objs.
func listPage(objs []runtime.Object) []boltstore.Op {
	ops := make([]boltstore.Op, len(objs))
	for i, o := range objs {
		ops[i] = boltstore.Op{Type: boltstore.OpUpsert, Obj: o}
	}
	return ops
}

// revertAndRemigrate migrates path back to schema target and checks the
// revert: the report (reportOK), a file equal to before (a Dump taken at
// target before the upgrade), a file this build refuses until it is migrated
// again, and a migration forward that gives want back.
func revertAndRemigrate(t *testing.T, path string, target uint64, before []string, want []storeSpec, reportOK func(migrations.Report) bool) {
	t.Helper()
	o := opts()
	o.Target = u64(target)
	rep, err := migrations.Migrate(path, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.To != target || !reportOK(rep) {
		t.Fatalf("revert report %+v", rep)
	}
	if d := migrationstest.DiffDumps(before, migrationstest.Dump(t, path)); d != "" {
		t.Fatalf("the revert does not give back the v%d file:\n%s", target, d)
	}
	if _, err := cachefile.Open(path, cachefile.Options{ReadOnly: true}); !errors.Is(err, cachefile.ErrNeedsMigration) {
		t.Fatalf("after the revert: want ErrNeedsMigration, got %v", err)
	}
	if _, err := migrations.Migrate(path, opts()); err != nil {
		t.Fatal(err)
	}
	verifyV1(t, path, want)
}
