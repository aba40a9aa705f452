package boltinformer_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

// deadClient is a clientset for an address nothing listens on: its
// requests fail as they do while the apiserver is down (connection
// refused).
func deadClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// matching returns the lines that contain every one of subs.
func (l *lines) matching(subs ...string) []string {
	var out []string
	for _, s := range l.get() {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(s, sub)
		}
		if all {
			out = append(out, s)
		}
	}
	return out
}

// infoLines are the lines logged at the default level (V(0) info lines).
func (l *lines) infoLines() []string { return l.matching(`"level"=0 `) }

// errorLines are the lines logged at error level.
func (l *lines) errorLines() []string {
	var out []string
	for _, s := range l.get() {
		if !strings.Contains(s, `"level"=`) {
			out = append(out, s)
		}
	}
	return out
}

// stepWhenWaiting steps fc by d once cond holds and something waits on fc.
func stepWhenWaiting(t *testing.T, fc *testingclock.FakeClock, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, waitTimeout, func() bool { return cond() && fc.HasWaiters() })
	fc.Step(d)
}

// A cold start and a relist each say, in one info line, why they listed,
// how many objects and how long it took; a new file's indexes, built from
// nothing, are not reported as rebuilt.
func TestColdStartAndRelistLogOneInfoLineEach(t *testing.T) {
	src := newSource(t)
	for i := range 5 {
		src.Add(testutil.Pod("ns", fmt.Sprint("p", i), "", testutil.Node("n1")))
	}
	path := filepath.Join(t.TempDir(), "cache.db")
	run := func(lw cache.ListerWatcher) (*lines, string) {
		var log lines
		c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: log.logger()})
		if err != nil {
			t.Fatal(err)
		}
		inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{Indexers: testutil.PodIndexers()})
		if err != nil {
			t.Fatal(err)
		}
		stop := runUntilCleanup(t, c, inf)
		testutil.Eventually(t, "HasSynced", waitTimeout, inf.HasSynced)
		rv := inf.LastSyncResourceVersion()
		stop()
		return &log, rv
	}

	log, rv := run(src)
	got := log.infoLines()
	if len(got) != 1 || len(log.matching(`"msg"="Cold start done: listed and stored every object"`, `"reason"="cold_start" "objects"=5 "duration"=`, `"resourceVersion"="`+rv+`"`)) != 1 {
		t.Fatalf("a cold start logged %d lines at the default level, want its one line (reason, objects, duration):\n%s", len(got), strings.Join(got, "\n"))
	}

	src.Modify(testutil.Pod("ns", "p1", "", testutil.Node("n2")))
	src.Delete(testutil.Pod("ns", "p2", "", testutil.Node("n1")))
	src.Add(testutil.Pod("ns", "p5", "", testutil.Node("n1")))
	lw := newCountingLW(src)
	lw.expire(rv)
	log, _ = run(lw)
	got = log.infoLines()
	relisted := log.matching(`"msg"="Relist done: stored what changed since the store's resourceVersion"`,
		`"reason"="expired" "objects"=5 "duration"=`, `"added"=1 "updated"=1 "deleted"=1`)
	if len(got) != 2 || len(log.matching(`"msg"="Resuming watch from the stored resourceVersion"`)) != 1 || len(relisted) != 1 {
		t.Fatalf("a warm start whose watch expired logged %d lines at the default level, want two: the warm start's and the relist's (reason, objects, changes, duration):\n%s",
			len(got), strings.Join(got, "\n"))
	}
}

// While the apiserver cannot be reached, a Cache asks its ClusterIdentity
// once for all its informers, not once per informer; every failed request
// counts in list_watch_errors_total; and the log says plainly that the
// apiserver cannot be reached, in one error line, then that it was reached
// again.
func TestClusterIdentityAskedOncePerCacheWhileUnreachable(t *testing.T) {
	const fails = 3
	dead := boltinformer.KubeSystemUID(deadClient(t).CoreV1())
	var calls atomic.Int32
	identity := func(ctx context.Context) (string, error) {
		if calls.Add(1) <= fails {
			return dead(ctx)
		}
		return "uid-1", nil
	}
	var log lines
	reg := prometheus.NewRegistry()
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), boltinformer.Options{
		NoSync: true, Logger: log.logger(), Registerer: reg, ClusterIdentity: identity,
	})
	if err != nil {
		t.Fatal(err)
	}
	fc := testingclock.NewFakeClock(time.Now())
	var infs []*boltinformer.Informer
	for _, obj := range []runtime.Object{&v1.Pod{}, &v1.ConfigMap{}, &v1.Service{}} {
		inf, err := c.NewInformer(newSource(t), obj, boltinformer.InformerOptions{Clock: fc})
		if err != nil {
			t.Fatal(err)
		}
		infs = append(infs, inf)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	ran := make(chan struct{}, len(infs))
	for _, inf := range infs {
		go func() { defer func() { ran <- struct{}{} }(); inf.RunWithContext(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range infs {
			<-ran
		}
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	errorsCounted := func() float64 {
		var sum float64
		for _, store := range []string{"Pod.v1", "ConfigMap.v1", "Service.v1"} {
			sum += counterValue(t, reg, "boltinformer_list_watch_errors_total", "store", store)
		}
		return sum
	}
	for i := 1; i <= fails; i++ {
		// Backoffs of 0.8 s doubling, with jitter up to half of each: 7 s
		// ends each, and the three stay within one outageLogEvery.
		stepWhenWaiting(t, fc, 7*time.Second, fmt.Sprintf("identity request %d to fail", i), func() bool {
			return calls.Load() == int32(i) && errorsCounted() == float64(i)
		})
	}
	for _, inf := range infs {
		testutil.Eventually(t, "HasSynced", waitTimeout, inf.HasSynced)
	}
	if n := calls.Load(); n != fails+1 {
		t.Errorf("the ClusterIdentityFunc was called %d times for 3 informers, want %d (once per attempt, for the whole cache)", n, fails+1)
	}
	if n := errorsCounted(); n != fails {
		t.Errorf("list_watch_errors_total moved by %v, want %d (one per failed identity request)", n, fails)
	}
	errs := log.errorLines()
	if len(errs) != 1 || len(log.matching(`"msg"="Cannot reach the apiserver;`, `"request"="the cluster's identity`, "connection refused")) != 1 {
		t.Errorf("got %d error lines, want one saying the apiserver cannot be reached:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	if got := log.matching(`"msg"="Reached the apiserver again"`, fmt.Sprintf(`"failedRequests"=%d`, fails)); len(got) != 1 {
		t.Errorf("got %d lines saying the apiserver was reached again, want 1:\n%s", len(got), strings.Join(log.get(), "\n"))
	}
}

// switchLW serves src, or fails every request as against an apiserver that
// is down while down is set.
type switchLW struct {
	src, dead cache.ListerWatcher
	down      atomic.Bool
	failed    atomic.Int32
}

func (s *switchLW) List(o metav1.ListOptions) (runtime.Object, error) {
	if s.down.Load() {
		s.failed.Add(1)
		return s.dead.List(o)
	}
	return s.src.List(o)
}

func (s *switchLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	if s.down.Load() {
		s.failed.Add(1)
		return s.dead.Watch(o)
	}
	return s.src.Watch(o)
}

// An informer whose apiserver is down says so at error level once (not at
// each retry), counts each failed request, and says when it reaches the
// apiserver again.
func TestUnreachableApiserverLoggedOncePerStore(t *testing.T) {
	const fails = 3
	src := newSource(t)
	src.Add(testutil.Pod("ns", "p0", "", testutil.Node("n1")))
	lw := &switchLW{src: src, dead: cache.NewListWatchFromClient(deadClient(t).CoreV1().RESTClient(), "pods", "", fields.Everything())}
	lw.down.Store(true)
	var log lines
	reg := prometheus.NewRegistry()
	c, err := boltinformer.Open(filepath.Join(t.TempDir(), "cache.db"), boltinformer.Options{NoSync: true, Logger: log.logger(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	fc := testingclock.NewFakeClock(time.Now())
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{Clock: fc, WatchList: reflector.WatchListOff})
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, c, inf)
	for i := 1; i <= fails; i++ {
		// The reflector's backoff: 0.8 s doubling, with jitter up to as much.
		testutil.Eventually(t, fmt.Sprintf("request %d to fail", i), waitTimeout, func() bool {
			return lw.failed.Load() == int32(i) && counterValue(t, reg, "boltinformer_list_watch_errors_total", "store", "Pod.v1") == float64(i) && fc.HasWaiters()
		})
		if i == fails {
			lw.down.Store(false)
		}
		fc.Step(7 * time.Second)
	}
	testutil.Eventually(t, "HasSynced", waitTimeout, inf.HasSynced)
	errs := log.errorLines()
	if len(errs) != 1 || len(log.matching(`"msg"="Cannot reach the apiserver;`, `"store"="Pod.v1"`, `"request"="list or watch"`, "connection refused")) != 1 {
		t.Errorf("got %d error lines, want one saying the apiserver cannot be reached:\n%s", len(errs), strings.Join(log.get(), "\n"))
	}
	if got := log.matching(`"msg"="Reached the apiserver again"`, fmt.Sprintf(`"failedRequests"=%d`, fails)); len(got) != 1 {
		t.Errorf("got %d lines saying the apiserver was reached again, want 1:\n%s", len(got), strings.Join(log.get(), "\n"))
	}
}
