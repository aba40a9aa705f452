package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/ctrlcache"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// reconciledAnnotation is set by the test's reconciler to the ConfigMap's
// data["version"].
const reconciledAnnotation = "e2e.boltinformer.io/reconciled"

// TestControllerRuntimeManager runs a real controller-runtime manager whose
// informers are boltinformer's (ctrlcache.NewCache), with a
// reconciler that reads ConfigMaps through the manager's cached client
// (from the cache file) and annotates them with their data's version. Objects
// created before and after the manager started, and later updates, are
// all reconciled, and the file holds the annotated objects.
func TestControllerRuntimeManager(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := newNamespace(t, cl, "e2e-ctrl")
	cms := createConfigMaps(t, cl, ns, 0, 20)

	path := filepath.Join(t.TempDir(), "cache.db")
	logger := testutil.Logger(t)
	bc, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(c.Config(), manager.Options{
		Logger:                 logger,
		Cache:                  crcache.Options{DefaultNamespaces: map[string]crcache.Config{ns: {}}},
		NewCache:               ctrlcache.NewCache(bc, ctrlcache.Options{}),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	reconciler := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var cm v1.ConfigMap
		if err := mgr.GetClient().Get(ctx, req.NamespacedName, &cm); err != nil {
			return reconcile.Result{}, crclient.IgnoreNotFound(err)
		}
		reads.Add(1)
		if cm.Annotations[reconciledAnnotation] == cm.Data["version"] {
			return reconcile.Result{}, nil
		}
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[reconciledAnnotation] = cm.Data["version"]
		return reconcile.Result{}, mgr.GetClient().Update(ctx, &cm)
	})
	if err := builder.ControllerManagedBy(mgr).For(&v1.ConfigMap{}).Named("e2e-" + ns).Complete(reconciler); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}
	t.Cleanup(stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("the manager's cache did not sync")
	}

	for k, cm := range createConfigMaps(t, cl, ns, 20, 40) {
		cms[k] = cm
	}
	reconciled := func() string {
		var pending []string
		for _, cm := range listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}) {
			cm := cm.(*v1.ConfigMap)
			if cm.Annotations[reconciledAnnotation] != cm.Data["version"] {
				pending = append(pending, cm.Name)
			}
		}
		if len(pending) > 0 {
			return fmt.Sprintf("%d not reconciled: %s", len(pending), head(pending))
		}
		return ""
	}
	testutil.EventuallyDiff(t, "every ConfigMap to be reconciled", convergeTimeout, reconciled)
	m := newMutation()
	for i := 0; i < 5; i++ {
		cm, err := cl.CoreV1().ConfigMaps(ns).Get(ctx, cmName(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m.update(t, cl, cm, "v2")
	}
	testutil.EventuallyDiff(t, "the updated ConfigMaps to be reconciled", convergeTimeout, reconciled)

	info, err := bc.Info()
	if err != nil {
		t.Fatal(err)
	}
	store := `ConfigMap.v1{namespace="` + ns + `"}`
	if len(info.Stores) != 1 || info.Stores[0].Name != store {
		t.Fatalf("the file has stores %+v, want one, %s", info.Stores, store)
	}
	ours, ok := bc.Informer(store)
	if !ok {
		t.Fatalf("no informer holds store %s", store)
	}
	want := listObjects(t, cl, "configmaps", ns, metav1.ListOptions{})
	testutil.EventuallyDiff(t, "the file to hold the reconciled objects", convergeTimeout, func() string {
		return diffRVs(rvs(want), rvs(storeObjects(ours)))
	})

	assertSameObjects(t, "cache file vs LIST", want, storeObjects(ours))
	if reads.Load() == 0 {
		t.Fatal("the reconciler never read an object")
	}
	t.Logf("the reconciler read %d objects through the cached client", reads.Load())

	stop()
	boltstoretest.Verify(t, (*boltstore.Store)(ours.Store()))
	if err := bc.Close(); err != nil {
		t.Fatal(err)
	}
	boltstoretest.CheckFile(t, path)
}
