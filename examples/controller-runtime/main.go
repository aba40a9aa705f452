// Command controller-runtime is a controller-runtime manager whose
// informers keep their caches on disk through boltinformer: copy it to
// start your own. It reconciles the ConfigMaps of one namespace, reading
// them through the manager's cached client (from the cache file), and
// annotates each with the number of keys in its data.
//
// Two lines make the manager's cache boltinformer's (see run):
// boltinformer.Open, and ctrlcache.NewCache as the manager's NewCache next
// to the cache.Options it would use anyway. Each store is named and scoped
// from those same cache.Options, one per namespace, so they cannot drift
// apart, and a run with another --namespace keeps the first namespace's
// store beside its own. The cache logs through the manager's logger,
// exports its metrics on the manager's /metrics, and serves the live file
// to `cachectl get configmaps -n NS --socket DB.sock`.
//
// It prints one "synced" line (JSON) once the ConfigMaps informer the
// controller reads from has synced, and its readiness probe (/readyz)
// fails until then; one "stopped" line on SIGTERM. A restart resumes each
// WATCH from the file instead of listing again.
//
//	go run ./examples/controller-runtime --kubeconfig ~/.kube/config --db /tmp/ctrl.db --namespace default
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/ctrlcache"
)

// keysAnnotation is what the reconciler writes: the number of data keys.
const keysAnnotation = "example.boltinformer.io/keys"

type flags struct {
	db, namespace, socket, metricsAddr, probeAddr string
}

func main() {
	var f flags
	flag.StringVar(&f.db, "db", "controller.db", "cache file")
	flag.StringVar(&f.namespace, "namespace", "default", "namespace whose ConfigMaps are reconciled")
	flag.StringVar(&f.socket, "admin-socket", "", "unix socket serving the cache to cachectl --socket (default: the --db path + \".sock\")")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "the manager's metrics address (\"0\" for none)")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "the manager's health probe address (\"0\" for none)")
	klog.InitFlags(nil)
	flag.Parse()
	if f.socket == "" {
		f.socket = f.db + ".sock"
	}
	// One logger for the manager and the cache: swap in zap (zapr) or any
	// other logr sink here and both follow.
	ctrl.SetLogger(klog.Background())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f); err != nil {
		fmt.Fprintln(os.Stderr, "controller-runtime example:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags) error {
	cfg, err := ctrl.GetConfig() // --kubeconfig, $KUBECONFIG, in-cluster or ~/.kube/config
	if err != nil {
		return err
	}
	bc, err := boltinformer.Open(f.db, boltinformer.Options{
		Logger:      ctrl.Log.WithName("boltinformer"),
		Registerer:  ctrlmetrics.Registry,
		AdminSocket: f.socket,
	})
	if err != nil {
		return err
	}
	defer bc.Close()
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Cache:                  crcache.Options{DefaultNamespaces: map[string]crcache.Config{f.namespace: {}}},
		NewCache:               ctrlcache.NewCache(bc, ctrlcache.Options{}),
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.probeAddr,
	})
	if err != nil {
		return err
	}
	r := &reconciler{client: mgr.GetClient()}
	if err := ctrl.NewControllerManagedBy(mgr).For(&v1.ConfigMap{}).Complete(r); err != nil {
		return err
	}
	// Ready once the informer the controller reads from has synced: the
	// manager's WaitForCacheSync would wait only for the informers made so
	// far, and the controller makes its own when it starts. GetInformer
	// makes it (or finds the controller's) and waits for it to sync.
	var ready atomic.Bool
	if err := mgr.AddReadyzCheck("cache", func(*http.Request) error {
		if !ready.Load() {
			return errors.New("the ConfigMaps informer has not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	start := time.Now()
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if _, err := mgr.GetCache().GetInformer(ctx, &v1.ConfigMap{}); err != nil {
			if ctx.Err() != nil {
				return nil // stopped before it synced
			}
			return err
		}
		ready.Store(true)
		report("synced", map[string]any{"syncSeconds": time.Since(start).Seconds(), "adminSocket": f.socket})
		return nil
	})); err != nil {
		return err
	}
	// Start returns once every informer has stopped; the deferred Close
	// then closes the file.
	if err := mgr.Start(ctx); err != nil {
		return err
	}
	report("stopped", map[string]any{"reconciled": r.reconciled})
	return nil
}

// reconciler annotates a ConfigMap with the number of its data keys.
type reconciler struct {
	client     client.Client
	reconciled int64 // only the controller's single worker writes it
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm v1.ConfigMap
	if err := r.client.Get(ctx, req.NamespacedName, &cm); err != nil { // from the cache file
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.reconciled++
	want := strconv.Itoa(len(cm.Data))
	if cm.Annotations[keysAnnotation] == want {
		return reconcile.Result{}, nil
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[keysAnnotation] = want
	return reconcile.Result{}, r.client.Update(ctx, &cm)
}

func report(event string, fields map[string]any) {
	fields["event"] = event
	b, _ := json.Marshal(fields)
	fmt.Println(string(b))
}
