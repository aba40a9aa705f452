package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// parallelRun is a cache file with informers whose ListerWatcher is a
// reflector.ListWatch, which decodes the WATCH responses on every core and
// whose informers store the protobuf bytes the apiserver sent.
type parallelRun struct {
	cache  *boltinformer.Cache
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startParallelRun(t *testing.T, path string) *parallelRun {
	t.Helper()
	c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	r := &parallelRun{cache: c, cancel: func() {}}
	t.Cleanup(r.stop)
	return r
}

// informer makes and starts an informer of resource in ns through a
// ListWatch (protobuf or JSON), with transform if not nil, and waits for it
// to sync.
func (r *parallelRun) informer(t *testing.T, cl *client, resource, ns string, example runtime.Object, protobuf bool, transform cache.TransformFunc) *boltinformer.Informer {
	t.Helper()
	lw := reflector.NewListWatch(cl.CoreV1().RESTClient(), resource, scheme.Scheme,
		reflector.ListWatchOptions{Namespace: ns, PreferProtobuf: protobuf})
	inf, err := r.cache.NewInformer(lw, example, boltinformer.InformerOptions{Namespace: ns, Resource: resource})
	if err != nil {
		t.Fatal(err)
	}
	if transform != nil {
		if err := inf.SetTransform(transform); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := r.cancel
	r.cancel = func() { stop(); cancel() }
	r.wg.Go(func() { inf.RunWithContext(ctx) })
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatalf("%s informer did not sync within %v", resource, syncTimeout)
	}
	return inf
}

func (r *parallelRun) stop() {
	if r.cache == nil {
		return
	}
	r.cancel()
	r.wg.Wait()
	r.cache.Close()
	r.cache = nil
}

// withoutManagedFields is a transform: it drops managedFields in place and
// labels the object, so that a store holding the bytes as received instead
// of the transformed object shows.
func withoutManagedFields(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
		o.SetLabels(map[string]string{"transformed": "yes"})
	}
	return obj, nil
}

// TestParallelListWatch syncs the bulk namespace through reflector.ListWatch:
// Pods in protobuf (stored as the bytes the apiserver sent), ConfigMaps in
// JSON, and Pods again with a transform, which must store the transformed
// objects. Each store then holds what a LIST returns, content included. In
// a namespace of its own, ConfigMaps created, updated and deleted reach the
// store through the watch, and a warm restart resumes with the same content.
func TestParallelListWatch(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := bulkNamespace(t, cl)

	run := startParallelRun(t, filepath.Join(t.TempDir(), "cache.db"))
	pods := run.informer(t, cl, "pods", ns, &v1.Pod{}, true, nil)
	cms := run.informer(t, cl, "configmaps", ns, &v1.ConfigMap{}, false, nil)
	assertSameObjects(t, "pods (protobuf) vs LIST", listObjects(t, cl, "pods", ns, metav1.ListOptions{}), storeObjects(pods))
	assertSameObjects(t, "configmaps (JSON) vs LIST", listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}), storeObjects(cms))
	run.stop()

	transformed := startParallelRun(t, filepath.Join(t.TempDir(), "transformed.db"))
	tpods := transformed.informer(t, cl, "pods", ns, &v1.Pod{}, true, withoutManagedFields)
	want := listObjects(t, cl, "pods", ns, metav1.ListOptions{})
	for _, obj := range want {
		if _, err := withoutManagedFields(obj); err != nil {
			t.Fatal(err)
		}
	}
	assertSameObjects(t, "transformed pods vs LIST, transformed", want, storeObjects(tpods))
	transformed.stop()

	own := newNamespace(t, cl, "e2e-parallel")
	existing := createConfigMaps(t, cl, own, 0, 200)
	path := filepath.Join(t.TempDir(), "watch.db")
	run = startParallelRun(t, path)
	inf := run.informer(t, cl, "configmaps", own, &v1.ConfigMap{}, true, nil)
	m := newMutation()
	for i := range 100 {
		cm := existing[own+"/"+cmName(i)]
		switch i % 3 {
		case 0:
			m.update(t, cl, cm, "v2")
		case 1:
			m.delete(t, cl, cm)
		default:
			m.create(t, cl, own, 1000+i)
		}
	}
	converged := func() string {
		want, got := listObjects(t, cl, "configmaps", own, metav1.ListOptions{}), storeObjects(inf)
		if d := diffRVs(rvs(want), rvs(got)); d != "" {
			return d
		}
		for k, w := range want {
			if !apiequality.Semantic.DeepEqual(normalized(w), normalized(got[k])) {
				return fmt.Sprintf("%s differs from the apiserver's", k)
			}
		}
		return ""
	}
	testutil.EventuallyDiff(t, "the watched changes to reach the store", convergeTimeout, converged)
	run.stop()

	run = startParallelRun(t, path)
	inf = run.informer(t, cl, "configmaps", own, &v1.ConfigMap{}, true, nil)
	assertSameObjects(t, "configmaps after a warm restart vs LIST", listObjects(t, cl, "configmaps", own, metav1.ListOptions{}), storeObjects(inf))
	run.stop()
}
