// Command agent is a small client-go controller whose informer cache lives
// on disk: copy it to start your own. It watches ConfigMaps through
// boltinformer, reads them with the generated lister, and reconciles each
// changed key from a workqueue, like any client-go controller.
//
// Restart it and it resumes its WATCH from the resourceVersion stored in
// --db instead of listing everything again. It prints one "synced" line
// (JSON) when its cache is ready, and one "stopped" line on SIGTERM.
//
// While it runs, the cache file is locked: read it through the admin socket
// (--admin-socket, next to the file by default) with
// `cachectl get configmaps -A --socket /tmp/agent.db.sock`, and scrape the
// cache's metrics from --metrics-addr (/metrics).
//
//	go run ./examples/agent --kubeconfig ~/.kube/config --db /tmp/agent.db
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/reflector"
)

type counts struct {
	replayed, added, updated, deleted, reconciled atomic.Int64
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default: in-cluster config)")
	db := flag.String("db", "agent.db", "cache file")
	namespace := flag.String("namespace", "", "namespace to watch (default: all)")
	socket := flag.String("admin-socket", "", "unix socket serving the cache to cachectl --socket (default: the --db path + \".sock\"; \"-\" for none)")
	metricsAddr := flag.String("metrics-addr", "127.0.0.1:9464", "address serving the cache's Prometheus metrics on /metrics (\"\" for none; port 0 picks one)")
	klog.InitFlags(nil)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch *socket {
	case "":
		*socket = *db + ".sock"
	case "-":
		*socket = ""
	}
	if err := run(ctx, *kubeconfig, *db, *namespace, *socket, *metricsAddr); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, db, namespace, socket, metricsAddr string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// The cache's metrics go to a registry of their own, served below.
	registry := prometheus.NewRegistry()
	c, err := boltinformer.Open(db, boltinformer.Options{AdminSocket: socket, Registerer: registry,
		ClusterIdentity: boltinformer.KubeSystemUID(client.CoreV1())})
	if err != nil {
		return err
	}
	defer c.Close()
	metricsURL := ""
	if metricsAddr != "" {
		l, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		srv := &http.Server{Handler: promhttp.HandlerFor(registry, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		metricsURL = "http://" + l.Addr().String() + "/metrics"
	}

	// The requests of cache.NewListWatchFromClient, with each WATCH response
	// decoded on every core and stored as the apiserver's protobuf bytes.
	lw := reflector.NewListWatch(client.CoreV1().RESTClient(), "configmaps", scheme.Scheme,
		reflector.ListWatchOptions{Namespace: namespace, PreferProtobuf: true})
	inf, err := c.NewInformer(lw, &v1.ConfigMap{}, boltinformer.InformerOptions{
		Namespace: namespace, Resource: "configmaps",
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if err != nil {
		return err
	}
	startRV, _ := inf.Store().ResourceVersion()
	onDisk, _ := inf.Store().Len()

	var n counts
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer queue.ShutDown()
	enqueue := func(obj interface{}) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			if isInInitialList {
				n.replayed.Add(1)
				return // a real controller might enqueue these too
			}
			n.added.Add(1)
			enqueue(obj)
		},
		UpdateFunc: func(_, obj interface{}) { n.updated.Add(1); enqueue(obj) },
		DeleteFunc: func(obj interface{}) { n.deleted.Add(1); enqueue(obj) },
	})
	if err != nil {
		return err
	}
	lister := corelisters.NewConfigMapLister(inf.GetIndexer())

	start := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced) {
		<-done
		return fmt.Errorf("cache did not sync")
	}
	report("synced", map[string]any{
		"storedObjects": onDisk, "startRV": startRV, "warmStart": startRV != "",
		"syncSeconds": time.Since(start).Seconds(), "initialAdds": n.replayed.Load(),
		"adminSocket": socket, "metrics": metricsURL,
	})

	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for processNext(queue, lister, &n) {
		}
	}, time.Second)

	<-ctx.Done()
	<-done
	report("stopped", map[string]any{
		"initialAdds": n.replayed.Load(), "added": n.added.Load(), "updated": n.updated.Load(),
		"deleted": n.deleted.Load(), "reconciled": n.reconciled.Load(), "rv": inf.LastSyncResourceVersion(),
	})
	return nil
}

// processNext reconciles one key: it reads the object through the lister
// (from disk) and would act on it here.
func processNext(queue workqueue.TypedRateLimitingInterface[string], lister corelisters.ConfigMapLister, n *counts) bool {
	key, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(key)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleError(err)
		queue.Forget(key)
		return true
	}
	if _, err := lister.ConfigMaps(ns).Get(name); err != nil && !isNotFound(err) {
		queue.AddRateLimited(key)
		return true
	}
	n.reconciled.Add(1)
	queue.Forget(key)
	return true
}

func report(event string, fields map[string]any) {
	fields["event"] = event
	b, _ := json.Marshal(fields)
	fmt.Println(string(b))
}
