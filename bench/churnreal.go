package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/boltinformer/boltinformer/internal/testcluster"
)

// churnSenders is how many updates to kube-apiserver are in flight at
// once: enough for the highest rate, whatever a request's latency.
const churnSenders = 16

// realChurn updates Pods on kube-apiserver, each patch stamped with the
// time the sender sent it.
type realChurn struct {
	cs         kubernetes.Interface
	n          int
	namespaces int
	// next picks the Pod of the next update (a stride prime to n).
	next atomic.Int64
}

// send patches one Pod with the phase and the send time.
func (r *realChurn) send(ctx context.Context, phase string) error {
	i := int((r.next.Add(1) * 7919) % int64(r.n))
	p := Pod(i, r.namespaces, 0)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		phaseAnnotation, phase, sentAnnotation, strconv.FormatInt(time.Now().UnixNano(), 10))
	_, err := r.cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// Steady sends rate updates a second for d: update j is due at j/rate,
// and churnSenders goroutines send them as they fall due.
func (r *realChurn) Steady(ctx context.Context, phase string, rate int, d time.Duration) error {
	total := int(float64(rate) * d.Seconds())
	start := time.Now()
	return r.sendAll(ctx, phase, total, func(j int) time.Duration {
		return time.Until(start.Add(time.Duration(float64(j) / float64(rate) * float64(time.Second))))
	})
}

// Burst sends count updates as fast as the senders go.
func (r *realChurn) Burst(ctx context.Context, phase string, count int) error {
	return r.sendAll(ctx, phase, count, func(int) time.Duration { return 0 })
}

func (r *realChurn) sendAll(ctx context.Context, phase string, total int, wait func(j int) time.Duration) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, churnSenders)
	for w := range churnSenders {
		wg.Go(func() {
			for {
				j := int(next.Add(1) - 1)
				if j >= total {
					return
				}
				if d := wait(j); d > 0 && !sleepCtx(ctx, d) {
					errs[w] = ctx.Err()
					return
				}
				if err := r.send(ctx, phase); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runChurnReal runs the churn against kube-apiserver on a cluster of its
// own: client-go, boltinformer and controller-runtime watch RealN Pods
// while the sender updates them.
func (d *driver) runChurnReal(ctx context.Context) error {
	c := d.cfg.Churn
	c.defaults()
	d.progress("churn: starting etcd and kube-apiserver")
	cl, err := testcluster.Start(ctx, testcluster.Options{})
	if errors.Is(err, testcluster.ErrBinaryNotFound) {
		d.res.Skipped = append(d.res.Skipped, fmt.Sprintf("churn against kube-apiserver: %v", err))
		return nil
	}
	if err != nil {
		return err
	}
	defer cl.Stop()
	cfg := cl.Config()
	target := Target{Host: cfg.Host, BearerToken: cfg.BearerToken, CAData: cfg.CAData, JSON: d.cfg.JSON}
	cs, err := target.Clientset(nil)
	if err != nil {
		return err
	}
	if err := populate(ctx, cs, c.RealN, d.cfg.Namespaces, 0); err != nil {
		return err
	}
	src := &realChurn{cs: cs, n: c.RealN, namespaces: d.cfg.Namespaces}
	phases := churnPhases(c.RealRates, c.Seconds, c.RealBurst)
	return d.churnRun(ctx, src, churnScenario, "real", c.RealN, target, phases, []string{ImplClientGo, ImplBolt, ImplCR}, 0)
}
