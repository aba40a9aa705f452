package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
	"github.com/boltinformer/boltinformer/reflector"
)

func init() { subcommands = append(subcommands, newSyncCommand) }

// errSync means a resource could not be synced.
var errSync = errors.New("sync failed")

// syncOptions are the flags of cachectl sync.
type syncOptions struct {
	kubeconfig    string
	kubeContext   string
	namespace     string
	db            string
	resources     []string
	allNamespaces bool
	selector      string
	fieldSelector string
	metricsAddr   string
	socket        string
	timeout       time.Duration
	pageSize      int64
	security      syncSecurityOptions
	log           logOptions
}

// AddFlags adds sync's flags, kubectl's connection flags among them.
func (o *syncOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster config)")
	fs.StringVar(&o.kubeContext, "context", o.kubeContext, "The kubeconfig context to use")
	fs.StringVarP(&o.namespace, "namespace", "n", o.namespace, "Cache only this namespace (namespaced resources)")
	fs.StringVar(&o.db, "db", o.db, "Path of the cache file to keep current (created if missing)")
	fs.StringSliceVar(&o.resources, "resource", o.resources, "Resources to cache, comma-separated, as kubectl names them (pods, cm, deployments.apps, widgets.example.com)")
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", o.allNamespaces, "Cache every namespace (the default unless -n is given)")
	fs.StringVarP(&o.selector, "selector", "l", o.selector, "Label selector to cache only matching objects")
	fs.StringVar(&o.fieldSelector, "field-selector", o.fieldSelector, "Field selector to cache only matching objects")
	fs.StringVar(&o.metricsAddr, "metrics-addr", o.metricsAddr, "Serve Prometheus metrics at /metrics, liveness at /healthz and readiness (every resource synced) at /readyz on this address (host:port)")
	fs.StringVar(&o.socket, "socket", o.socket, "Serve read-only queries and snapshots on this unix socket (for cachectl --socket)")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "How long to wait for a cache file another process holds")
	fs.Int64Var(&o.pageSize, "page-size", o.pageSize, "LIST page size of a relist")
	o.security.AddFlags(fs)
	o.log.AddFlags(fs)
}

func newSyncCommand(e *env) *cobra.Command {
	o := &syncOptions{timeout: cachefile.DefaultLockTimeout, pageSize: 500, log: logOptions{format: logFormatText}}
	cmd := &cobra.Command{
		Use:   "sync --db PATH --resource RESOURCE[,RESOURCE…]",
		Short: "Keep a cache file current from the apiserver until interrupted",
		Long: `Keep the listed resources of a cluster current in a cache file until SIGINT
or SIGTERM, then close it cleanly.

On start, each resource resumes its WATCH from the resourceVersion stored in
the file (no LIST), or relists when the file has none or the apiserver no
longer serves it. The cluster is found as kubectl finds it: --kubeconfig,
$KUBECONFIG, ~/.kube/config, or the in-cluster config. Any resource discovery
knows can be cached, custom resources included.

While it runs, the file is locked: read it with --socket.

A request the apiserver refuses as malformed (400, for example a field
selector it does not support) ends sync with the apiserver's message. Other
failures (an unreachable apiserver, 403 until RBAC allows the request, 429)
are logged and retried with backoff, as informers do.

Logs go to stderr, as klog's text or, with --logging-format=json, as one
JSON object per line; -v=2 logs one line per change.`,
		Example: `  # Cache Pods and ConfigMaps of the whole cluster
  cachectl sync --db /var/lib/agent/cache.db --resource pods,configmaps --socket /run/agent.sock

  # Only one namespace, only some objects, with metrics
  cachectl sync --db cache.db --resource deployments.apps -n shop -l tier=web --metrics-addr 127.0.0.1:9090

  # Log every change as JSON
  cachectl sync --db cache.db --resource pods -v=2 --logging-format=json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(cmd); err != nil {
				return err
			}
			return o.run(cmd.Context(), e)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// Validate checks the flags before anything is contacted.
func (o *syncOptions) Validate(cmd *cobra.Command) error {
	switch {
	case o.db == "":
		return usageErrorf(cmd, "--db PATH is required")
	case len(o.resources) == 0:
		return usageErrorf(cmd, "--resource is required (for example --resource pods,configmaps)")
	case o.allNamespaces && o.namespace != "":
		return usageErrorf(cmd, "-n and -A are mutually exclusive")
	case o.timeout <= 0:
		return usageErrorf(cmd, "--timeout must be positive, got %s", o.timeout)
	case o.pageSize <= 0:
		return usageErrorf(cmd, "--page-size must be positive, got %d", o.pageSize)
	}
	if err := o.log.Validate(cmd); err != nil {
		return err
	}
	if _, err := labels.Parse(o.selector); err != nil {
		return usageErrorf(cmd, "bad label selector %q: %v", o.selector, err)
	}
	if o.fieldSelector != "" {
		if _, err := fields.ParseSelector(o.fieldSelector); err != nil {
			return usageErrorf(cmd, "bad field selector %q: %v", o.fieldSelector, err)
		}
	}
	return nil
}

// syncTarget is one resource to cache.
type syncTarget struct {
	arg     string
	mapping *meta.RESTMapping
	example runtime.Object
	lw      cache.ListerWatcher
}

// clientConfig loads the cluster's config as kubectl does.
func (o *syncOptions) clientConfig() (*rest.Config, meta.RESTMapper, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.kubeContext}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery: %w", err)
	}
	// One request first, so that an apiserver that cannot be reached or
	// refuses the credentials is reported as such, not as an unknown
	// resource type.
	if _, err := dc.ServerVersion(); err != nil {
		return nil, nil, serverError(err)
	}
	cached := memory.NewMemCacheClient(dc)
	// The shortcut expander resolves short names (cm, po, deploy) as kubectl does.
	return cfg, restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil), nil
}

func (o *syncOptions) run(ctx context.Context, e *env) error {
	logger := o.log.logger(e.streams.ErrOut)
	if e.setKlog != nil {
		e.setKlog(logger, o.log.verbosity)
	}
	ctx = klog.NewContext(ctx, logger)
	// say prints a progress line: as it is, or as a log entry in JSON.
	say := func(format string, args ...interface{}) {
		if o.log.format == logFormatJSON {
			logger.Info(fmt.Sprintf(format, args...))
			return
		}
		fmt.Fprintf(e.streams.ErrOut, format+"\n", args...)
	}

	cfg, mapper, err := o.clientConfig()
	if err != nil {
		return err
	}
	var targets []syncTarget
	for _, arg := range o.resources {
		t, err := o.target(cfg, mapper, strings.TrimSpace(arg))
		if err != nil {
			return err
		}
		targets = append(targets, t)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c, err := boltinformer.Open(o.db, o.security.apply(boltinformer.Options{LockTimeout: o.timeout, Registerer: reg, AdminSocket: o.socket, Logger: logger,
		ClusterIdentity: boltinformer.KubeSystemUID(core)}))
	if err != nil {
		if errors.Is(err, cachefile.ErrLocked) {
			return newError(cachefile.ErrLocked, "%s is locked by another process (waited %s): is another cachectl sync running on it?", o.db, o.timeout)
		}
		return fileError(o.db, err)
	}
	defer c.Close()

	ready := &readiness{}
	if o.metricsAddr != "" {
		stop, err := serveHTTP(o.metricsAddr, reg, ready)
		if err != nil {
			return err
		}
		defer stop()
	}

	// A permanent error of one resource ends the sync with it as cause.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	type started struct {
		t     syncTarget
		inf   *boltinformer.Informer
		start time.Time
	}
	var running []started
	for _, t := range targets {
		ns := ""
		if t.mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns = o.namespace
		}
		inf, err := c.NewInformer(t.lw, t.example, boltinformer.InformerOptions{
			Namespace: ns, LabelSelector: o.selector, FieldSelector: o.fieldSelector,
			Resource: t.mapping.Resource.Resource, PageSize: o.pageSize,
			Indexers: namespaceIndexer(t.mapping),
			// Only the event log is a handler; it wants the stored objects at -v=3.
			DisableReplay: !logger.V(3).Enabled(),
		})
		if err == nil {
			err = inf.SetWatchErrorHandlerWithContext(o.endOnPermanentError(t, cancel))
		}
		if err == nil && logger.V(2).Enabled() {
			_, err = inf.AddEventHandler(eventLogger{logger: klog.LoggerWithValues(logger, "resource", t.arg)})
		}
		if err != nil {
			cancel(nil)
			return fmt.Errorf("%s: %w", t.arg, err)
		}
		ready.add(t.arg, inf.HasSynced)
		rv, _ := inf.Store().ResourceVersion()
		n, _ := inf.Store().Len()
		relisting, reason, _ := (*boltstore.Store)(inf.Store()).RelistInProgress()
		switch {
		case relisting:
			say("%s: relisting: the last relist did not finish (%s); %d objects on disk", t.arg, reason, n)
		case rv == "":
			say("%s: relisting: the cache file has no resourceVersion for it (cold start)", t.arg)
		default:
			say("%s: resuming watch at resourceVersion %s (%d objects on disk)", t.arg, rv, n)
		}
		wg.Go(func() { inf.RunWithContext(ctx) })
		running = append(running, started{t: t, inf: inf, start: e.now()})
	}
	ready.allAdded()
	for _, r := range running {
		if !cache.WaitForNamedCacheSyncWithContext(ctx, r.inf.HasSynced) && ctx.Err() != nil {
			return syncFailure(ctx) // nil when interrupted before sync: a clean stop
		}
		n, _ := r.inf.Store().Len()
		say("%s: synced in %s: %d objects at resourceVersion %s",
			r.t.arg, e.now().Sub(r.start).Round(time.Millisecond), n, r.inf.LastSyncResourceVersion())
	}
	<-ctx.Done()
	if err := syncFailure(ctx); err != nil {
		return err
	}
	say("stopping: closing the cache file")
	return nil
}

// endOnPermanentError returns t's watch error handler: a request the
// apiserver refuses as malformed fails the same way on every retry, so it
// ends the sync (through fail) with the apiserver's message, worded as
// kubectl words it. Other errors get the informer's default handling: log,
// back off, retry.
func (o *syncOptions) endOnPermanentError(t syncTarget, fail context.CancelCauseFunc) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, _ *cache.Reflector, err error) {
		var status apierrors.APIStatus
		if !isPermanent(err) || !errors.As(err, &status) {
			listwatcher.DefaultWatchErrorHandler(ctx, nil, err)
			return
		}
		s := status.Status()
		if o.selector == "" && o.fieldSelector == "" {
			s.Message = fmt.Sprintf("Unable to list %q: %s", t.mapping.Resource, s.Message)
		} else {
			s.Message = fmt.Sprintf("Unable to find %q that match label selector %q, field selector %q: %s", t.mapping.Resource, o.selector, o.fieldSelector, s.Message)
		}
		fail(serverError(&apierrors.StatusError{ErrStatus: s}))
	}
}

// isPermanent reports the apiserver's answers that no retry changes: the
// request itself is wrong.
func isPermanent(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err)
}

// syncFailure is the error that ended the sync, nil for an interrupt.
func syncFailure(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, errServer) {
		return cause
	}
	return nil
}

// target resolves a resource argument through discovery and builds its
// ListerWatcher: typed (protobuf) for the types client-go knows, dynamic
// (unstructured) for the rest, CRDs included.
func (o *syncOptions) target(cfg *rest.Config, mapper meta.RESTMapper, arg string) (syncTarget, error) {
	gvr, gr := schema.ParseResourceArg(arg)
	var err error
	var gvk schema.GroupVersionKind
	if gvr != nil {
		gvk, err = mapper.KindFor(*gvr)
	}
	if gvr == nil || err != nil {
		gvk, err = mapper.KindFor(gr.WithVersion(""))
	}
	if err != nil && !meta.IsNoMatchError(err) {
		return syncTarget{}, serverError(err)
	}
	if err != nil {
		return syncTarget{}, newError(errUnknownResource, "the server doesn't have a resource type %q", arg)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return syncTarget{}, newError(errUnknownResource, "resource %q: %v", arg, err)
	}
	ns := ""
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = o.namespace
	}
	tweak := func(opts *metav1.ListOptions) {
		opts.LabelSelector, opts.FieldSelector = o.selector, o.fieldSelector
	}
	t := syncTarget{arg: arg, mapping: mapping}
	if scheme.Scheme.Recognizes(gvk) {
		rc, err := restClientFor(cfg, gvk.GroupVersion())
		if err != nil {
			return syncTarget{}, fmt.Errorf("%s: %w", arg, err)
		}
		example, _ := scheme.Scheme.New(gvk)
		t.example = example
		// The requests of cache.NewFilteredListWatchFromClient, each WATCH
		// response decoded on every core and stored as received.
		t.lw = reflector.NewListWatch(rc, mapping.Resource.Resource, scheme.Scheme, reflector.ListWatchOptions{
			Namespace: ns, PreferProtobuf: true, TweakListOptions: tweak,
		})
		return t, nil
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return syncTarget{}, err
	}
	ri := dyn.Resource(mapping.Resource).Namespace(ns)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	t.example = u
	t.lw = &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			return ri.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			return ri.Watch(ctx, opts)
		},
	}
	return t, nil
}

// restClientFor is a protobuf REST client for one group version.
func restClientFor(cfg *rest.Config, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.ContentType = "application/vnd.kubernetes.protobuf"
	return rest.RESTClientFor(c)
}

// namespaceIndexer indexes namespaced resources by namespace, which
// cachectl get -n uses.
func namespaceIndexer(m *meta.RESTMapping) cache.Indexers {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil
	}
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}
