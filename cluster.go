package boltinformer

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/reflector"
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
	return wait.Backoff{Duration: reflector.DefaultBackoffInit, Factor: 2, Jitter: 0.5, Cap: reflector.DefaultBackoffMax, Steps: 1 << 30}
}

// checkCluster records the cluster's identity in the store before Run reads
// the stored RV (docs/design.md, invariant 8). When the store belonged to
// another cluster it is emptied, and the reason the first relist must give
// is returned. Without Options.ClusterIdentity it does nothing: the resume
// check against the cluster's current RV is then the only protection. It
// retries a failing ClusterIdentityFunc until ctx is done and returns
// ok=false then; the informer must not start without knowing the cluster. An
// informer that has already started (or stopped) is left to Run to refuse.
func (inf *Informer) checkCluster(ctx context.Context) (reason reflector.RelistReason, ok bool) {
	identity := inf.clusterIdentity
	inf.startedMu.Lock()
	skip := inf.started || inf.stopped
	inf.startedMu.Unlock()
	if identity == nil || skip {
		return "", true
	}
	logger := klog.FromContext(ctx)
	backoff := clusterBackoff()
	for {
		id, err := identity(ctx)
		if err == nil && id == "" {
			err = fmt.Errorf("the ClusterIdentityFunc returned an empty identity")
		}
		if err == nil {
			var rep boltstore.ClusterReport
			if rep, err = inf.store.SetCluster(id); err == nil {
				if !rep.Reset {
					return "", true
				}
				logger.Info("The store belonged to another cluster: emptied it, relisting", "cluster", id, "previousCluster", rep.Previous)
				return reflector.RelistClusterChanged, true
			}
		}
		if ctx.Err() != nil {
			return "", false
		}
		d := backoff.Step()
		logger.Error(err, "Cannot check the cluster's identity; the informer waits for it", "retryIn", d)
		select {
		case <-ctx.Done():
			return "", false
		case <-inf.clock.After(d):
		}
	}
}

// markStoppedBeforeStart records that Run returned before the informer started.
func (inf *Informer) markStoppedBeforeStart() {
	inf.startedMu.Lock()
	defer inf.startedMu.Unlock()
	if !inf.started {
		inf.stopped = true
	}
}
