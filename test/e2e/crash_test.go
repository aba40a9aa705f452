package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// The crash child's environment.
const (
	envKubeconfig = "E2E_KUBECONFIG"
	envDB         = "E2E_DB"
	envNamespace  = "E2E_NAMESPACE"
	envWatchList  = "E2E_WATCHLIST" // "off": paged LISTs; else client-go's default
)

const (
	crashObjects = 1000 // ConfigMaps before the churn
	crashKeys    = 1400 // the churn creates, updates and deletes among these
	crashKills   = 5
)

// crashIndexers are the indexes of the crash test's store.
func crashIndexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"shard": func(obj interface{}) ([]string, error) {
			return []string{obj.(*v1.ConfigMap).Labels["shard"]}, nil
		},
	}
}

// crashOptions are the crash child's informer options: small pages and
// batches, so that a kill lands between many commits.
func crashOptions(watchList string) boltinformer.InformerOptions {
	opts := boltinformer.InformerOptions{Indexers: crashIndexers(), PageSize: 50, BatchSize: 20}
	if watchList == "off" {
		opts.WatchList = reflector.WatchListOff
	}
	return opts
}

// crashChild runs an informer on the ConfigMaps of a namespace of the real
// apiserver, with fsync on, until it is killed. It prints
// testutil.ReadyLine once its file is open and "synced" once the informer
// has synced.
func crashChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 3
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(envKubeconfig))
	if err != nil {
		return fail(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(err)
	}
	c, err := boltinformer.Open(os.Getenv(envDB), boltinformer.Options{})
	if err != nil {
		return fail(err)
	}
	ns := os.Getenv(envNamespace)
	opts := crashOptions(os.Getenv(envWatchList))
	opts.Namespace, opts.Resource = ns, "configmaps"
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
	inf, err := c.NewInformer(lw, &v1.ConfigMap{}, opts)
	if err != nil {
		return fail(err)
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if err != nil {
		return fail(err)
	}
	fmt.Println(testutil.ReadyLine)
	go func() {
		if cache.WaitForCacheSync(nil, inf.HasSynced, reg.HasSynced) {
			fmt.Println("synced")
		}
	}()
	inf.RunWithContext(context.Background()) // until SIGKILL
	return 0
}

// churn creates, updates and deletes ConfigMaps of a namespace until stopped.
type churn struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	ops    int
	err    error
}

// startChurn runs workers that change the ConfigMaps [0,keys) of ns; each
// worker owns the indexes congruent to it, so they never conflict.
func startChurn(cl *client, ns string, existing map[string]*v1.ConfigMap, keys, workers int, seed int64) *churn {
	ctx, cancel := context.WithCancel(cl.ctx)
	ch := &churn{cancel: cancel}
	for w := 0; w < workers; w++ {
		mine := map[int]*v1.ConfigMap{}
		for i := w; i < keys; i += workers {
			if cm, ok := existing[ns+"/"+cmName(i)]; ok {
				mine[i] = cm
			}
		}
		r := rand.New(rand.NewSource(seed + int64(w)))
		ch.wg.Go(func() {
			cms := cl.CoreV1().ConfigMaps(ns)
			for n := 0; ctx.Err() == nil; n++ {
				i := w + workers*r.Intn(keys/workers)
				cm, exists := mine[i]
				var err error
				switch {
				case !exists:
					cm, err = cms.Create(ctx, newConfigMap(ns, i, "v1"), metav1.CreateOptions{})
					mine[i] = cm
				case r.Intn(4) == 0:
					err = cms.Delete(ctx, cm.Name, metav1.DeleteOptions{})
					delete(mine, i)
				default:
					cm = cm.DeepCopy()
					cm.Data["version"] = fmt.Sprint("v", n)
					cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
					mine[i] = cm
				}
				if err != nil {
					if ctx.Err() == nil {
						ch.mu.Lock()
						ch.err = fmt.Errorf("churn %s: %w", cmName(i), err)
						ch.mu.Unlock()
					}
					return
				}
				ch.mu.Lock()
				ch.ops++
				ch.mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	return ch
}

// stop stops the churn and returns how many changes it made.
func (ch *churn) stop() (int, error) {
	ch.cancel()
	ch.wg.Wait()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.ops, ch.err
}

// TestSIGKILLDuringChurn runs an informer in a child process against the
// real apiserver while ConfigMaps are created, updated and deleted, and
// kills it with SIGKILL several times: during its cold relist, during the
// watch, during warm restarts. After every kill the file passes bbolt's and
// the store's checks (cachefile.CheckTx, boltstore's Verify) and, unless a relist was cut
// short, holds exactly what the apiserver held at the stored RV (a LIST at
// that exact RV): the watermark invariant. A last start converges to the
// apiserver with nothing lost.
func TestSIGKILLDuringChurn(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-crash")
	existing := createConfigMaps(t, cl, ns, 0, crashObjects)
	dir := t.TempDir()
	kubeconfig, path := testutil.WriteKubeconfig(t, c.Config()), filepath.Join(dir, "cache.db")

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	ch := startChurn(cl, ns, existing, crashKeys, 3, seed)
	defer ch.stop()
	for kill := 0; kill < crashKills; kill++ {
		watchList := "auto"
		if kill%2 == 0 {
			watchList = "off"
		}
		child := testutil.StartChild(t, "crash", envKubeconfig+"="+kubeconfig, envDB+"="+path, envNamespace+"="+ns, envWatchList+"="+watchList)
		when := "after start"
		if kill%2 == 1 {
			child.Await(syncTimeout, "synced")
			when = "after sync"
		}
		delay := time.Duration(50+r.Intn(1500)) * time.Millisecond
		child.KillAfter(delay) // when to kill: random, not an assertion
		checkKilledFile(t, cl, path, ns, fmt.Sprintf("kill %d (%v %s, watchList=%s)", kill, delay, when, watchList))
	}
	ops, err := ch.stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the churn made %d changes", ops)

	opts := crashOptions("auto")
	rc := startCache(t, cl, path, ns, configMapSpec(opts))
	ri := rc.infs[0]
	want := listObjects(t, cl, "configmaps", ns, metav1.ListOptions{})
	testutil.EventuallyDiff(t, "the restarted informer to converge", convergeTimeout, func() string {
		return diffRVs(rvs(want), rvs(storeObjects(ri.Informer)))
	})

	assertSameObjects(t, "cache vs LIST", want, storeObjects(ri.Informer))
	t.Logf("last start: %v", ri.lw.Calls())
	rc.stop()
}

// checkKilledFile checks what a killed child left at path: bbolt's and
// cachefile's structural checks, the store's invariants, and, when the
// store claims an RV outside a relist, that it holds exactly the objects a
// LIST at that exact RV returns (content included). A file killed while it
// was built without fsync (before its first sync) must be refused until a
// writable open discards and rebuilds it.
func checkKilledFile(t *testing.T, cl *client, path, ns, what string) {
	t.Helper()
	if _, err := os.Stat(cachefile.MarkerPath(path)); err == nil {
		_, err := cachefile.Open(path, cachefile.Options{ReadOnly: true, Logger: testutil.Logger(t)})
		if !errors.Is(err, cachefile.ErrNotDurable) {
			t.Fatalf("%s: killed during its unsynced build: open read-only gave %v, want ErrNotDurable", what, err)
		}
		t.Logf("%s: killed during its unsynced build: refused, the next start rebuilds it", what)
		return
	}
	boltstoretest.CheckFile(t, path)
	logger := testutil.Logger(t)
	st, err := boltstore.Open(path, "ConfigMap.v1", cachefile.Options{ReadOnly: true, Logger: logger},
		boltstore.StoreOptions{Object: &v1.ConfigMap{}, Indexers: crashIndexers(), Logger: logger})
	if err != nil {
		t.Fatalf("%s: open what the killed process left: %v", what, err)
	}
	defer st.Close()
	if err := st.Verify(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	rv, err := st.ResourceVersion()
	if err != nil {
		t.Fatal(err)
	}
	relisting, reason, err := st.RelistInProgress()
	if err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	n, _ := st.Len()
	if rv == "" || relisting {
		t.Logf("%s: %d objects, RV %q, relist in progress (%s): the next start relists", what, n, rv, reason)
		return
	}
	got := map[string]runtime.Object{}
	for _, o := range st.List() {
		got[keyOf(o)] = o.(runtime.Object)
	}
	want := listObjects(t, cl, "configmaps", ns, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	assertSameObjects(t, fmt.Sprintf("%s: the file at RV %s vs a LIST at that RV", what, rv), want, got)
	t.Logf("%s: %d objects at RV %s, equal to the apiserver's at that RV", what, n, rv)
}
