package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/boltinformer/boltinformer/internal/testcluster"
)

// StormLabel selects the Pods the storm agents cache.
const StormLabel = "bench.boltinformer.io/storm"

// runReal runs scenarios 1, 3, 4 and 8 against a real etcd and
// kube-apiserver holding RealN Pods.
func (d *driver) runReal(ctx context.Context) error {
	n := d.cfg.RealN
	d.progress("kube-apiserver: starting etcd and kube-apiserver")
	cl, err := testcluster.Start(ctx, testcluster.Options{})
	if errors.Is(err, testcluster.ErrBinaryNotFound) {
		return fmt.Errorf("%w: %v", errNoCluster, err)
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
	start := time.Now()
	if err := populate(ctx, cs, n, d.cfg.Namespaces, d.cfg.StormObjects); err != nil {
		return err
	}
	d.progress("kube-apiserver: created %d pods in %s", n, time.Since(start).Round(time.Second))
	wire, err := realWireSizes(ctx, cs, n)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.res.Wire[childName("real", n)] = wire
	d.mu.Unlock()

	measure := func(name string, fn func() error) error {
		before, err := readRealMetrics(ctx, cl)
		if err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
		after, err := readRealMetrics(ctx, cl)
		if err != nil {
			return err
		}
		m := RealMetrics{Lists: after.Lists - before.Lists, BytesSent: after.BytesSent - before.BytesSent}
		if old, ok := d.res.Real[name]; ok {
			m.Seconds = old.Seconds
		}
		d.res.Real[name] = m
		return nil
	}
	db := filepath.Join(d.work, "real.db")
	// Scenarios 1, 2 and 3 (and the reference of 4): cold starts, then a
	// relist forced by restarting kube-apiserver. The apiserver's counters
	// cover the cold start only: they start again at zero on a restart.
	for _, impl := range []string{ImplClientGo, ImplBolt} {
		name := childName("sync", "real", n, impl)
		d.progress("%s", name)
		trigger := filepath.Join(d.work, "relist-"+impl)
		var p *childProc
		if err := measure(name, func() error {
			var err error
			if p, err = d.startChild(ctx, name, Spec{Scenario: ScenarioSync, Impl: impl, Target: target, ExpectAdds: n, DB: db, RelistTrigger: trigger}); err != nil {
				return err
			}
			if err := waitForFile(ctx, trigger+".ready", p); err != nil {
				_, werr := p.wait()
				return errors.Join(err, werr)
			}
			return nil
		}); err != nil {
			return err
		}
		d.progress("%s: restarting kube-apiserver to force a relist", name)
		if err := cl.RestartAPIServer(ctx); err != nil {
			_, werr := p.wait()
			return errors.Join(err, werr)
		}
		if _, err := p.wait(); err != nil {
			return err
		}
	}
	// The same cold start with client-go's default transport (HTTP/2 over
	// TLS), whose per-stream receive buffer is on the heap: what the peak
	// is without boltinformer.LowMemoryRESTConfig.
	d.mu.Lock()
	d.res.Notes = append(d.res.Notes, "Against kube-apiserver, boltinformer's clients are made with boltinformer.LowMemoryRESTConfig (HTTP/1.1), client-go's with client-go's default transport (HTTP/2); the row \"over HTTP/2\" is boltinformer without it.")
	d.mu.Unlock()
	name := childName("sync-http2", "real", n, ImplBolt)
	d.progress("%s", name)
	if _, err := d.child(ctx, name, Spec{Scenario: ScenarioSync, Impl: ImplBolt, Target: target, ExpectAdds: n,
		DB: filepath.Join(d.work, "real-http2.db"), HTTP2: true}); err != nil {
		return err
	}
	// Scenario 4: 1% changes while the agent is down, then a warm restart,
	// with and without the replay, against client-go's cold start. Each is
	// run Repeat times, interleaved with a cold start of each (the report
	// takes the medians): every warm start has its own copy of the file, so
	// each sees the same change.
	reps := d.cfg.Repeat
	for i := range reps {
		for _, kind := range []string{"warm", "warm-noreplay"} {
			if err := copyFile(db, filepath.Join(d.work, fmt.Sprintf("%s-%d.db", kind, i))); err != nil {
				return err
			}
		}
	}
	change := max(int(float64(n)*d.cfg.ChangeFraction), 1)
	lastRV, _, err := changePods(ctx, cs, n, d.cfg.Namespaces, change, 0)
	if err != nil {
		return err
	}
	d.progress("kube-apiserver: changed %d pods, last resourceVersion %d", change, lastRV)
	for i := range reps {
		for _, w := range []struct {
			kind     string
			noReplay bool
		}{{"warm", false}, {"warm-noreplay", true}} {
			name := childName(w.kind, "real", n, ImplBolt) + fmt.Sprintf("#%d", i)
			d.progress("%s", name)
			if err := d.settle(ctx, name); err != nil {
				return err
			}
			if err := measure(name, func() error {
				_, err := d.child(ctx, name, Spec{Scenario: ScenarioSync, Impl: ImplBolt, Target: target,
					DB: filepath.Join(d.work, fmt.Sprintf("%s-%d.db", w.kind, i)), SkipMemory: true,
					DisableReplay: w.noReplay, ExpectAdds: map[bool]int{false: n, true: 0}[w.noReplay], WaitRV: lastRV})
				return err
			}); err != nil {
				return err
			}
		}
		if err := d.coldStart(ctx, "real", n, target, i); err != nil {
			return err
		}
	}
	// Scenario 8: the restart storm.
	return d.storm(ctx, cl, cs, target, measure)
}

// waitForFile waits until path exists or the child exits.
func waitForFile(ctx context.Context, path string, p *childProc) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return fmt.Errorf("%s exited before %s", p.name, path)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// realPod is Pod(i) as a client creates it: no server-set fields.
func realPod(i, namespaces, stormObjects int) *v1.Pod {
	p := Pod(i, namespaces, 0)
	p.ResourceVersion, p.UID, p.CreationTimestamp, p.ManagedFields = "", "", metav1.Time{}, nil
	if i < stormObjects {
		p.Labels[StormLabel] = "true"
	}
	return p
}

// populate creates the namespaces and n Pods with their status (a second
// write: the status of a create is dropped), 16 at a time.
func populate(ctx context.Context, cs kubernetes.Interface, n, namespaces, stormObjects int) error {
	for i := range min(namespaces, n) {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%03d", i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return parallel(ctx, n, 16, func(i int) error {
		p := realPod(i, namespaces, stormObjects)
		status := p.Status
		pods := cs.CoreV1().Pods(p.Namespace)
		created, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = status
		_, err = pods.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
}

// realWireSizes measures the Pods as kube-apiserver stored them (its
// managed fields make them larger than the generated ones) on a page of
// 500 and scales to n.
func realWireSizes(ctx context.Context, cs kubernetes.Interface, n int) (WireSizes, error) {
	list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 500})
	if err != nil {
		return WireSizes{}, err
	}
	var pb, js int64
	for i := range list.Items {
		p := &list.Items[i]
		raw, err := p.Marshal()
		if err != nil {
			return WireSizes{}, err
		}
		pb += int64(len(envelope(nil, "v1", "Pod", raw)))
		j, err := podJSON(raw, true)
		if err != nil {
			return WireSizes{}, err
		}
		js += int64(len(j))
	}
	k := int64(len(list.Items))
	if k == 0 {
		return WireSizes{}, errors.New("no pods to measure")
	}
	return WireSizes{Objects: n, Protobuf: pb * int64(n) / k, JSON: js * int64(n) / k}, nil
}

// changePods annotates count Pods spread over all (a stride prime to n)
// and returns the highest resourceVersion written, and the highest among
// the first stormObjects Pods (0 if none of them changed).
func changePods(ctx context.Context, cs kubernetes.Interface, n, namespaces, count, stormObjects int) (int64, int64, error) {
	var last, lastStorm atomic.Int64
	setMax := func(a *atomic.Int64, v int64) {
		for {
			cur := a.Load()
			if v <= cur || a.CompareAndSwap(cur, v) {
				return
			}
		}
	}
	gen := time.Now().UnixNano()
	err := parallel(ctx, count, 8, func(j int) error {
		i := int((int64(j)*7919 + 13) % int64(n))
		p := Pod(i, namespaces, 0)
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.boltinformer.io/changed":"%d"}}}`, gen)
		out, err := cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return err
		}
		rv, err := strconv.ParseInt(out.ResourceVersion, 10, 64)
		if err != nil {
			return err
		}
		setMax(&last, rv)
		if i < stormObjects {
			setMax(&lastStorm, rv)
		}
		return nil
	})
	return last.Load(), lastStorm.Load(), err
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// readRealMetrics reads kube-apiserver's counters for pods.
func readRealMetrics(ctx context.Context, cl *testcluster.Cluster) (RealMetrics, error) {
	text, err := cl.Metrics(ctx)
	if err != nil {
		return RealMetrics{}, err
	}
	return parseRealMetrics(text)
}

func parseRealMetrics(text string) (RealMetrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return RealMetrics{}, err
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	var m RealMetrics
	if mf, ok := families["apiserver_request_total"]; ok {
		for _, s := range mf.GetMetric() {
			if label(s, "verb") == "LIST" && label(s, "resource") == "pods" {
				m.Lists += s.GetCounter().GetValue()
			}
		}
	}
	if mf, ok := families["apiserver_response_sizes"]; ok {
		for _, s := range mf.GetMetric() {
			// A WATCH's response size is recorded when it ends, which
			// may be after the step; its events are counted as they go.
			if label(s, "resource") == "pods" && label(s, "verb") != "WATCH" {
				m.BytesSent += s.GetHistogram().GetSampleSum()
			}
		}
	}
	if mf, ok := families["apiserver_watch_events_sizes"]; ok {
		for _, s := range mf.GetMetric() {
			if label(s, "kind") == "Pod" || label(s, "resource") == "pods" {
				m.BytesSent += s.GetHistogram().GetSampleSum()
			}
		}
	}
	return m, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
