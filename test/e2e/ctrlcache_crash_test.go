package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/ctrlcache"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// envNamespaces is the ctrlcache child's comma-separated namespaces.
const envNamespaces = "E2E_NAMESPACES"

const (
	ctrlCrashObjects = 150 // ConfigMaps per namespace before the churn
	ctrlCrashKeys    = 200 // the churn creates, updates and deletes among these
	ctrlCrashKills   = 3
)

// ctrlShape is one shape in which the manager reads ConfigMaps, with the
// name ctrlcache gives its store in a namespace.
type ctrlShape struct {
	name  string
	obj   func() crclient.Object
	list  func() crclient.ObjectList
	store func(ns string) string
}

var ctrlShapes = []ctrlShape{
	{"typed", func() crclient.Object { return &v1.ConfigMap{} }, func() crclient.ObjectList { return &v1.ConfigMapList{} },
		func(ns string) string { return `ConfigMap.v1{namespace="` + ns + `"}` }},
	{"unstructured", func() crclient.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("ConfigMap"))
		return u
	}, func() crclient.ObjectList {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("ConfigMapList"))
		return u
	}, func(ns string) string { return `configmaps.v1{namespace="` + ns + `"}` }},
	{"metadata", func() crclient.Object {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("ConfigMap"))
		return m
	}, func() crclient.ObjectList {
		m := &metav1.PartialObjectMetadataList{}
		m.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("ConfigMapList"))
		return m
	}, func(ns string) string { return `metadata:configmaps.v1{namespace="` + ns + `"}` }},
}

// ctrlManager is a manager logging to logger whose cache, made by ctrlcache
// on bc, covers namespaces; small pages and batches, so that a kill lands
// between many commits.
func ctrlManager(cfg *rest.Config, logger logr.Logger, bc *boltinformer.Cache, namespaces []string) (manager.Manager, error) {
	byNS := map[string]crcache.Config{}
	for _, ns := range namespaces {
		byNS[ns] = crcache.Config{}
	}
	return manager.New(cfg, manager.Options{
		Logger:                 logger,
		Cache:                  crcache.Options{DefaultNamespaces: byNS},
		NewCache:               ctrlcache.NewCache(bc, ctrlcache.Options{Informer: boltinformer.InformerOptions{PageSize: 50, BatchSize: 20}}),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
}

// syncShapes gets the manager's informer of each shape, waiting for each
// to sync.
func syncShapes(ctx context.Context, mgr manager.Manager) error {
	for _, s := range ctrlShapes {
		if _, err := mgr.GetCache().GetInformer(ctx, s.obj()); err != nil {
			return fmt.Errorf("informer of %s ConfigMaps: %w", s.name, err)
		}
	}
	return nil
}

// ctrlcacheChild runs a manager whose cache covers the namespaces of
// envNamespaces and reads ConfigMaps in three shapes, with fsync on, until
// it is killed. It prints testutil.ReadyLine once the manager is made and
// "synced" once the informers of every shape have synced.
func ctrlcacheChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "ctrlcache child:", err)
		return 3
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(envKubeconfig))
	if err != nil {
		return fail(err)
	}
	bc, err := boltinformer.Open(os.Getenv(envDB), boltinformer.Options{})
	if err != nil {
		return fail(err)
	}
	mgr, err := ctrlManager(cfg, klog.Background(), bc, strings.Split(os.Getenv(envNamespaces), ","))
	if err != nil {
		return fail(err)
	}
	fmt.Println(testutil.ReadyLine)
	ctx := context.Background()
	go func() {
		if err := syncShapes(ctx, mgr); err != nil {
			fmt.Fprintln(os.Stderr, "ctrlcache child:", err)
			return
		}
		fmt.Println("synced")
	}()
	if err := mgr.Start(ctx); err != nil { // until SIGKILL
		return fail(err)
	}
	return 0
}

// TestCtrlCacheSIGKILL runs, in a child process, a controller-runtime
// manager whose cache (ctrlcache) covers three namespaces and reads
// ConfigMaps typed, unstructured and metadata-only: nine informers, nine
// stores in one file. While the ConfigMaps of the three namespaces are
// created, updated and deleted, it is killed with SIGKILL several times,
// during its cold start and after it synced. After every kill the file
// passes its checks and each store that claims an RV holds exactly what the
// apiserver held at that RV. A last start, after a kill of a synced
// manager and more changes while it was down, resumes every store: no
// full LIST, and its reads in every shape and namespace equal the
// apiserver's.
func TestCtrlCacheSIGKILL(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	var namespaces []string
	churns := map[string]*churn{}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for i := range 3 {
		ns := newNamespace(t, cl, "e2e-ctrlcrash")
		namespaces = append(namespaces, ns)
		existing := createConfigMaps(t, cl, ns, 0, ctrlCrashObjects)
		churns[ns] = startChurn(cl, ns, existing, ctrlCrashKeys, 1, seed+int64(i))
	}
	stopChurns := func() {
		for ns, ch := range churns {
			ops, err := ch.stop()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the churn made %d changes in %s", ops, ns)
		}
	}
	defer func() {
		for _, ch := range churns {
			_, _ = ch.stop()
		}
	}()
	dir := t.TempDir()
	kubeconfig, path := testutil.WriteKubeconfig(t, c.Config()), filepath.Join(dir, "cache.db")
	r := rand.New(rand.NewSource(seed))
	for kill := range ctrlCrashKills {
		child := testutil.StartChild(t, "ctrlcache", envKubeconfig+"="+kubeconfig, envDB+"="+path, envNamespaces+"="+strings.Join(namespaces, ","))
		when := "after start"
		if kill%2 == 1 || kill == ctrlCrashKills-1 {
			child.Await(syncTimeout, "synced")
			when = "after sync"
		}
		delay := time.Duration(50+r.Intn(1000)) * time.Millisecond
		child.KillAfter(delay) // when to kill: random, not an assertion
		checkKilledCtrlFile(t, cl, path, namespaces, fmt.Sprintf("kill %d (%v %s)", kill, delay, when))
	}
	// The last kill came after a sync: every store holds an RV to resume
	// from. The objects go on changing while the manager is down.
	for _, ch := range churns {
		ch.awaitOps(t, 20)
	}
	stopChurns()

	cfg, _, log := loggedConfig(t, c)
	logger := testutil.Logger(t)
	bc, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrlManager(cfg, logger, bc, namespaces)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	if err := syncShapes(syncCtx, mgr); err != nil {
		cancel()
		<-done
		t.Fatal(err)
	}
	if lists := log.listsOf("configmaps"); len(lists) > 0 {
		t.Errorf("the restarted manager listed again: %v", lists)
	}
	for _, ns := range namespaces {
		want := listObjects(t, cl, "configmaps", ns, metav1.ListOptions{})
		for _, s := range ctrlShapes {
			read := func() map[string]runtime.Object {
				l := s.list()
				if err := mgr.GetCache().List(ctx, l, crclient.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				return listItems(t, l)
			}
			testutil.EventuallyDiff(t, fmt.Sprintf("the %s reads of %s to match the apiserver", s.name, ns), convergeTimeout, func() string {
				return diffRVs(rvs(want), rvs(read()))
			})
			if s.name == "typed" {
				assertSameObjects(t, "typed reads of "+ns+" vs LIST", want, read())
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("manager: %v", err)
	}
	if err := bc.Close(); err != nil {
		t.Fatal(err)
	}
	boltstoretest.CheckFile(t, path)
}

// awaitOps waits until the churn has made n more changes.
func (ch *churn) awaitOps(t *testing.T, n int) {
	t.Helper()
	ch.mu.Lock()
	target := ch.ops + n
	ch.mu.Unlock()
	testutil.Eventually(t, fmt.Sprintf("%d more changes", n), convergeTimeout, func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return ch.ops >= target || ch.err != nil
	})
}

// listItems returns the items of a list read from the cache, by key.
func listItems(t *testing.T, l crclient.ObjectList) map[string]runtime.Object {
	t.Helper()
	out := map[string]runtime.Object{}
	switch l := l.(type) {
	case *v1.ConfigMapList:
		for i := range l.Items {
			out[keyOf(&l.Items[i])] = &l.Items[i]
		}
	case *unstructured.UnstructuredList:
		for i := range l.Items {
			out[keyOf(&l.Items[i])] = &l.Items[i]
		}
	case *metav1.PartialObjectMetadataList:
		for i := range l.Items {
			out[keyOf(&l.Items[i])] = &l.Items[i]
		}
	default:
		t.Fatalf("listItems: %T", l)
	}
	return out
}

// checkKilledCtrlFile checks what a killed ctrlcache child left at path:
// the file's structural checks, each store's invariants, and, for each
// store that claims an RV outside a relist, that it holds exactly the
// ConfigMaps (keys and RVs; typed ones in full) a LIST at that RV returns.
func checkKilledCtrlFile(t *testing.T, cl *client, path string, namespaces []string, what string) {
	t.Helper()
	if _, err := os.Stat(cachefile.MarkerPath(path)); err == nil {
		t.Logf("%s: killed during its unsynced build: the next start rebuilds it", what)
		return
	}
	boltstoretest.CheckFile(t, path)
	examples := map[string]runtime.Object{"typed": &v1.ConfigMap{}, "unstructured": &unstructured.Unstructured{}, "metadata": &metav1.PartialObjectMetadata{}}
	logger := testutil.Logger(t)
	for _, ns := range namespaces {
		for _, s := range ctrlShapes {
			name := s.store(ns)
			st, err := boltstore.Open(path, name, cachefile.Options{ReadOnly: true, Logger: logger}, boltstore.StoreOptions{
				Object: examples[s.name], Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, Logger: logger,
			})
			if err != nil {
				t.Fatalf("%s: open store %s: %v", what, name, err)
			}
			func() {
				defer st.Close()
				if err := st.Verify(); err != nil {
					t.Fatalf("%s: store %s: %v", what, name, err)
				}
				rv, err := st.ResourceVersion()
				if err != nil {
					t.Fatal(err)
				}
				relisting, _, err := st.RelistInProgress()
				if err != nil {
					t.Fatal(err)
				}
				if rv == "" || relisting {
					return
				}
				got := map[string]runtime.Object{}
				for _, o := range st.List() {
					got[keyOf(o)] = o.(runtime.Object)
				}
				want := listObjects(t, cl, "configmaps", ns, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
				if s.name == "typed" {
					assertSameObjects(t, fmt.Sprintf("%s: store %s at RV %s vs a LIST at that RV", what, name, rv), want, got)
				} else if d := diffRVs(rvs(want), rvs(got)); d != "" {
					t.Fatalf("%s: store %s at RV %s vs a LIST at that RV: %s", what, name, rv, d)
				}
			}()
		}
	}
	t.Logf("%s: every store that claims an RV equals the apiserver's at it", what)
}
