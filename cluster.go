package boltinformer

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/listwatcher"
)

// ClusterIdentityFunc returns a string that identifies the cluster the
// informers' ListerWatchers talk to, the same across apiserver restarts and
// different for another or a recreated cluster. KubeSystemUID makes one.
type ClusterIdentityFunc func(ctx context.Context) (string, error)

// KubeSystemUID returns a ClusterIdentityFunc that reads the UID of the
// kube-system namespace, for example with clientset.CoreV1(). The apiserver
// creates that namespace when it first starts on an empty etcd and never
// deletes it, so its UID names one etcd's lifetime: another cluster, or one
// recreated on a fresh etcd, has another. An etcd restored from a backup of
// the same cluster keeps it; the resume check against the cluster's current
// resourceVersion catches that case. The informer needs "get" on namespaces
// for it.
func KubeSystemUID(namespaces corev1client.NamespacesGetter) ClusterIdentityFunc {
	return func(ctx context.Context) (string, error) {
		ns, err := namespaces.Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("read the cluster identity (the UID of namespace %s): %w", metav1.NamespaceSystem, err)
		}
		if ns.UID == "" {
			return "", fmt.Errorf("read the cluster identity: namespace %s has no UID", metav1.NamespaceSystem)
		}
		return string(ns.UID), nil
	}
}

// clusterBackoff paces the retries of a ClusterIdentityFunc that fails (the
// apiserver is down): as the reflector's, 800 ms doubling to 30 s.
func clusterBackoff() wait.Backoff {
	return wait.Backoff{Duration: listwatcher.DefaultBackoffInit, Factor: 2, Jitter: 0.5, Cap: listwatcher.DefaultBackoffMax, Steps: 1 << 30}
}

// clusterIdentity asks a Cache's ClusterIdentityFunc for all its
// informers: once, since every informer of a Cache talks to one cluster.
// The first informer to need it asks, retrying with a backoff; the others
// wait for its answer, and an informer started later reuses it. A cluster
// recreated behind the same address while the process runs is then caught
// by the resume check against the cluster's current RV, as without
// ClusterIdentity.
type clusterIdentity struct {
	fn ClusterIdentityFunc
	// mu guards the fields below; it is never held while fn runs.
	mu sync.Mutex
	// id is the answer, once known.
	id string
	// asking is set while an informer asks.
	asking bool
	// asked is closed, and replaced, when an informer stops asking.
	asked chan struct{}
}

// clusterIdentity returns the cache's clusterIdentity, made at the first
// call; nil without Options.ClusterIdentity. The caller holds c.mu.
func (c *Cache) clusterIdentity() *clusterIdentity {
	if c.identity == nil && c.opts.ClusterIdentity != nil {
		c.identity = &clusterIdentity{fn: c.opts.ClusterIdentity, asked: make(chan struct{})}
	}
	return c.identity
}

// get returns the cluster's identity: the one known, the answer of the
// informer asking, or inf's own, asked until it gets one. It returns false
// once ctx is done.
func (ci *clusterIdentity) get(ctx context.Context, inf *Informer) (string, bool) {
	for {
		ci.mu.Lock()
		if ci.id != "" {
			id := ci.id
			ci.mu.Unlock()
			return id, true
		}
		if !ci.asking {
			ci.asking = true
			ci.mu.Unlock()
			id, ok := ci.ask(ctx, inf)
			ci.mu.Lock()
			ci.asking = false
			if ok {
				ci.id = id
			}
			close(ci.asked)
			ci.asked = make(chan struct{})
			ci.mu.Unlock()
			return id, ok
		}
		asked := ci.asked
		ci.mu.Unlock()
		select {
		case <-asked:
		case <-ctx.Done():
			return "", false
		}
	}
}

// ask calls fn until it answers or ctx is done. Each failure counts in inf's
// list_watch_errors_total, since it is a request the apiserver did not
// answer; one that says the apiserver cannot be reached is logged as such
// (inf's outage), any other at each retry.
func (ci *clusterIdentity) ask(ctx context.Context, inf *Informer) (string, bool) {
	logger := klog.FromContext(ctx)
	backoff := clusterBackoff()
	for {
		id, err := ci.fn(ctx)
		if err == nil && id == "" {
			err = fmt.Errorf("the ClusterIdentityFunc returned an empty identity")
		}
		if err == nil {
			inf.outage.reached(logger)
			return id, true
		}
		if ctx.Err() != nil {
			return "", false
		}
		inf.metrics.listWatchErrors.WithLabelValues(inf.name).Inc()
		d := backoff.Step()
		if unreachable(err) {
			inf.outage.fail(logger, "the cluster's identity (every informer of this cache waits for it)", err)
		} else {
			logger.Error(err, "Cannot read the cluster's identity (Options.ClusterIdentity); every informer of this cache waits for it", "retryIn", d)
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-inf.clock.After(d):
		}
	}
}

// checkCluster records the cluster's identity in the store before Run reads
// the stored RV (docs/design.md, invariant 8). When the store belonged to
// another cluster it is emptied, and the reason the first relist must
// give is returned. Without Options.ClusterIdentity it does nothing: the resume
// check against the cluster's current RV is then the only protection. It
// waits for the identity (clusterIdentity.get) and retries a failing write
// until ctx is done, and returns ok=false then; the informer must not start
// without knowing the cluster. An informer that has already started (or
// stopped) is left to Run to refuse.
func (inf *Informer) checkCluster(ctx context.Context) (reason listwatcher.RelistReason, ok bool) {
	inf.startedMu.Lock()
	skip := inf.started || inf.stopped
	inf.startedMu.Unlock()
	if inf.identity == nil || skip {
		return "", true
	}
	id, ok := inf.identity.get(ctx, inf)
	if !ok {
		return "", false
	}
	logger := klog.FromContext(ctx)
	var rep boltstore.ClusterReport
	err := inf.retry(ctx, "record the cluster's identity", func() error {
		var err error
		rep, err = inf.store.SetCluster(id)
		return err
	})
	if err != nil {
		return "", false
	}
	if !rep.Reset {
		return "", true
	}
	logger.Info("The store belonged to another cluster: emptied it, relisting", "cluster", id, "previousCluster", rep.Previous)
	return listwatcher.RelistClusterChanged, true
}

// markStoppedBeforeStart records that Run returned before the informer started.
func (inf *Informer) markStoppedBeforeStart() {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	if !inf.started {
		inf.stopped = true
	}
}
