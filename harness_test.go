package boltinformer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// waitTimeout bounds every wait on an informer in this package's tests.
const waitTimeout = 30 * time.Second

func newSource(t *testing.T) *fcache.FakeControllerSource {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	return src
}

// countingLW counts LIST and WATCH calls and can answer a WATCH from chosen
// RVs with 410 Gone, like an apiserver whose watch cache moved on. The
// resume check (a LIST with Limit=1; relist pages are larger here) is
// counted apart from the LISTs of a relist.
type countingLW struct {
	src     *fcache.FakeControllerSource
	lists   atomic.Int32
	probes  atomic.Int32
	watches atomic.Int32
	mu      sync.Mutex
	expired map[string]bool
	watchRV []string
}

func newCountingLW(src *fcache.FakeControllerSource) *countingLW {
	return &countingLW{src: src, expired: map[string]bool{}}
}

func (c *countingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	if opts.Limit == 1 {
		c.probes.Add(1)
		return c.src.List(opts)
	}
	c.lists.Add(1)
	return c.src.List(opts)
}

func (c *countingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	c.watches.Add(1)
	c.mu.Lock()
	c.watchRV = append(c.watchRV, opts.ResourceVersion)
	gone := c.expired[opts.ResourceVersion]
	c.mu.Unlock()
	if gone {
		return nil, apierrors.NewResourceExpired("too old resource version: " + opts.ResourceVersion)
	}
	return c.src.Watch(opts)
}

func (c *countingLW) expire(rv string) {
	c.mu.Lock()
	c.expired[rv] = true
	c.mu.Unlock()
}

// recorder records what a handler sees, per key, in order.
type recorder struct {
	mu     sync.Mutex
	events []string
	perKey map[string][]string
}

func newRecorder() *recorder { return &recorder{perKey: map[string][]string{}} }

func (r *recorder) record(key, ev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, key+" "+ev)
	r.perKey[key] = append(r.perKey[key], ev)
}

func keyOf(obj interface{}) string {
	k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k
}

func (r *recorder) OnAdd(obj interface{}, initial bool) {
	r.record(keyOf(obj), fmt.Sprintf("add@%s initial=%v", testutil.RVOf(obj), initial))
}

func (r *recorder) OnUpdate(old, obj interface{}) {
	r.record(keyOf(obj), fmt.Sprintf("update@%s->%s", testutil.RVOf(old), testutil.RVOf(obj)))
}

func (r *recorder) OnDelete(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.record(t.Key, "delete(tombstone)")
		return
	}
	r.record(keyOf(obj), "delete")
}

func (r *recorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if strings.Contains(e, " "+prefix) {
			n++
		}
	}
	return n
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.events...)
}

// runInformer opens path, starts an informer with a recorder, and waits
// for HasSynced. stop cancels it, waits for Run, checks and closes the file.
func runInformer(t *testing.T, path string, lw cache.ListerWatcher, opts boltinformer.InformerOptions) (*boltinformer.Informer, *recorder, func()) {
	t.Helper()
	c, err := boltinformer.Open(path, boltinformer.Options{Logger: testutil.Logger(t), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(lw, &v1.Pod{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced, reg.HasSynced) {
		cancel()
		<-done
		t.Fatal("informer did not sync")
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		if !inf.IsStopped() {
			t.Error("IsStopped false after Run returned")
		}
		boltstoretest.Verify(t, (*boltstore.Store)(inf.Store()))
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		boltstoretest.CheckFile(t, path)
	}
	t.Cleanup(stop)
	return inf, rec, stop
}

func sourceKeys(t *testing.T, src *fcache.FakeControllerSource) map[string]string {
	obj, err := src.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, item := range obj.(*v1.List).Items {
		p := item.Object.(*v1.Pod)
		out[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return out
}

func storeKeys(inf *boltinformer.Informer) map[string]string {
	out := map[string]string{}
	for _, o := range inf.GetStore().List() {
		p := o.(*v1.Pod)
		out[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return out
}
