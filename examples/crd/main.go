package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/boltinformer/boltinformer"
	examplev1alpha1 "github.com/boltinformer/boltinformer/examples/crd/apis/example/v1alpha1"
	"github.com/boltinformer/boltinformer/examples/crd/generated/clientset/versioned"
	"github.com/boltinformer/boltinformer/examples/crd/generated/clientset/versioned/scheme"
	"github.com/boltinformer/boltinformer/examples/crd/generated/informers/externalversions/example"
	informersv1alpha1 "github.com/boltinformer/boltinformer/examples/crd/generated/informers/externalversions/example/v1alpha1"
	"github.com/boltinformer/boltinformer/examples/crd/generated/informers/externalversions/internalinterfaces"
	listersv1alpha1 "github.com/boltinformer/boltinformer/examples/crd/generated/listers/example/v1alpha1"
	"github.com/boltinformer/boltinformer/factory"
)

// crdManifest is the Widget CRD.
//
//go:embed crd.yaml
var crdManifest []byte

// fieldManager owns the fields the example writes (the CRD, Widgets' status).
const fieldManager = "boltinformer-crd-example"

type counts struct {
	replayed, added, updated, deleted, reconciled, statusWrites atomic.Int64
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default: in-cluster config)")
	db := flag.String("db", "crd.db", "cache file")
	namespace := flag.String("namespace", "", "namespace to watch (default: all)")
	socket := flag.String("admin-socket", "", "unix socket serving the cache to cachectl --socket (default: the --db path + \".sock\"; \"-\" for none)")
	installCRD := flag.Bool("install-crd", true, "apply the Widget CRD (crd.yaml) and wait until it is established")
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
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err == nil && *installCRD {
		err = applyCRD(ctx, cfg)
	}
	if err == nil {
		err = run(ctx, cfg, *db, *namespace, *socket)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crd:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg *rest.Config, db, namespace, socket string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c, err := boltinformer.Open(db, boltinformer.Options{AdminSocket: socket,
		ClusterIdentity: boltinformer.KubeSystemUID(kube.CoreV1())})
	if err != nil {
		return err
	}
	defer c.Close()

	// The generated factory's place: the generated group package (example)
	// makes its informers and listers on this factory, which keeps them in
	// the cache file. Its namespace and list options are the factory's.
	f := factory.NewGeneratedSharedInformerFactory[versioned.Interface, internalinterfaces.NewInformerFunc](
		c, client, scheme.Scheme, 0, factory.WithNamespace(namespace))
	widgets := example.New(f, f.Namespace(), f.TweakListOptions()).V1alpha1().Widgets()

	var n counts
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName]())
	defer queue.ShutDown()
	enqueue := func(w *examplev1alpha1.Widget) { queue.Add(cache.MetaObjectToName(w)) }
	reg, err := widgets.TypedInformer().AddTypedEventHandler(informersv1alpha1.WidgetDetailedHandlerFuncs{
		// Widgets replayed from the file at a warm start are reconciled
		// too: one may have changed in a way the controller never acted on.
		AddFunc: func(w *examplev1alpha1.Widget, isInInitialList bool) {
			if isInInitialList {
				n.replayed.Add(1)
			} else {
				n.added.Add(1)
			}
			enqueue(w)
		},
		UpdateFunc: func(_, w *examplev1alpha1.Widget) { n.updated.Add(1); enqueue(w) },
		DeleteFunc: func(d informersv1alpha1.DeletedWidget) { n.deleted.Add(1); queue.Add(d.GetObjectName()) },
	})
	if err != nil {
		return err // the informer could not be made (an error naming why)
	}
	// Under the generated accessors is a boltinformer informer: its store
	// says what the file held at start.
	store, ok := f.InformerFor(&examplev1alpha1.Widget{}, nil).(*boltinformer.Informer)
	if !ok {
		return fmt.Errorf("the Widget informer is a %T, not boltinformer's", f.InformerFor(&examplev1alpha1.Widget{}, nil))
	}
	startRV, _ := store.Store().ResourceVersion()
	onDisk, _ := store.Store().Len()

	start := time.Now()
	f.StartWithContext(ctx)
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), widgets.Informer().HasSynced, reg.HasSynced) {
		return fmt.Errorf("cache did not sync")
	}
	report("synced", map[string]any{
		"store": store.Name(), "storedObjects": onDisk, "startRV": startRV, "warmStart": startRV != "",
		"syncSeconds": time.Since(start).Seconds(), "initialAdds": n.replayed.Load(), "adminSocket": socket,
	})

	r := reconciler{client: client, lister: widgets.Lister(), counts: &n}
	var worker sync.WaitGroup
	worker.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			for r.processNext(ctx, queue) {
			}
		}, time.Second)
	})

	<-ctx.Done()
	queue.ShutDown()
	worker.Wait()
	f.Shutdown()
	report("stopped", map[string]any{
		"initialAdds": n.replayed.Load(), "added": n.added.Load(), "updated": n.updated.Load(),
		"deleted": n.deleted.Load(), "reconciled": n.reconciled.Load(), "statusWrites": n.statusWrites.Load(),
		"rv": store.LastSyncResourceVersion(),
	})
	return nil
}

// reconciler writes each Widget's status: the generation and colour it
// last saw.
type reconciler struct {
	client versioned.Interface
	lister listersv1alpha1.WidgetLister
	counts *counts
}

// processNext reconciles one Widget: it reads it through the generated
// lister (from disk, a typed *v1alpha1.Widget) and, when its status is
// behind its spec, writes the status through the generated clientset.
func (r reconciler) processNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[cache.ObjectName]) bool {
	name, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(name)
	w, err := r.lister.Widgets(name.Namespace).Get(name.Name)
	switch {
	case apierrors.IsNotFound(err):
		queue.Forget(name) // deleted: nothing to do
		return true
	case err != nil:
		utilruntime.HandleErrorWithContext(ctx, err, "Reading a Widget from the cache", "widget", name)
		queue.AddRateLimited(name)
		return true
	}
	r.counts.reconciled.Add(1)
	if w.Status.ObservedGeneration == w.Generation && w.Status.ObservedColor == w.Spec.Color {
		queue.Forget(name)
		return true
	}
	// The lister's objects are the cache's: change a copy.
	w = w.DeepCopy()
	w.Status.ObservedGeneration, w.Status.ObservedColor = w.Generation, w.Spec.Color
	if _, err := r.client.ExampleV1alpha1().Widgets(w.Namespace).UpdateStatus(ctx, w, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		if !apierrors.IsNotFound(err) {
			// A conflict means the cache is behind: its next event requeues
			// the Widget anyway.
			queue.AddRateLimited(name)
		}
		return true
	}
	r.counts.statusWrites.Add(1)
	queue.Forget(name)
	return true
}

// applyCRD applies crd.yaml with server-side apply through the dynamic
// client and waits until the apiserver serves Widgets.
func applyCRD(ctx context.Context, cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(crdManifest, &crd.Object); err != nil {
		return fmt.Errorf("crd.yaml: %w", err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply the Widget CRD: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conditions {
			if c, ok := c.(map[string]interface{}); ok && c["type"] == "Established" && c["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the Widget CRD to be established: %w", err)
	}
	return nil
}

func report(event string, fields map[string]any) {
	fields["event"] = event
	b, _ := json.Marshal(fields)
	fmt.Println(string(b))
}
