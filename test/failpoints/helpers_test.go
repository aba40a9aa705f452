//go:build failpoints

package failpoints_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// The history every informer test replays: 200 initial Pods (5 LIST pages
// of 40), then 1500 adds, updates and deletes over 260 names.
const (
	histSeed    = 7
	histInitial = 200
	histEvents  = 1500
	histKeys    = 260
	pageSize    = 40
	batchSize   = 50
	perMs       = 2 // events the child's server advances per millisecond
	storeName   = "Pod.v1"
	// killWithin bounds the wait for a child to reach its failpoint.
	killWithin = 90 * time.Second
)

func history() *testutil.History {
	return testutil.NewHistory(histSeed, histInitial, histEvents, histKeys)
}

func indexers() cache.Indexers {
	return cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		"node":               func(obj interface{}) ([]string, error) { return []string{obj.(*v1.Pod).Spec.NodeName}, nil },
	}
}

// syncTo runs an informer in this process until the file is at RV rv.
func syncTo(t *testing.T, path string, h *testutil.History, rv int64) {
	t.Helper()
	srv := &testutil.HistoryServer{H: h, Start: time.Now().Add(-time.Hour), PerMs: 1000, Cap: rv}
	inf, _, stop := runInformer(t, path, srv)
	defer stop()
	testutil.Eventually(t, fmt.Sprintf("the store at RV %d", rv), time.Minute, func() bool {
		return inf.Store().LastStoreSyncResourceVersion() == strconv.FormatInt(rv, 10)
	})
}

// runInformer runs an informer on path in this process with a handler
// that keeps the view of the objects it was told about.
func runInformer(t *testing.T, path string, lw cache.ListerWatcher) (*boltinformer.Informer, *view, func()) {
	t.Helper()
	c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.NewInformer(lw, &v1.Pod{}, boltinformer.InformerOptions{Indexers: indexers(), PageSize: pageSize, BatchSize: batchSize})
	if err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	v := &view{objs: map[string]string{}}
	if _, err := inf.AddEventHandler(v); err != nil {
		_ = c.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			if err := c.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return inf, v, stop
}

// view is a handler's picture of the objects, key → RV.
type view struct {
	mu   sync.Mutex
	objs map[string]string
}

func (v *view) set(obj any, deleted bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if deleted {
		delete(v.objs, key)
		return
	}
	v.objs[key] = obj.(*v1.Pod).ResourceVersion
}

func (v *view) OnAdd(obj any, _ bool) { v.set(obj, false) }
func (v *view) OnUpdate(_, obj any)   { v.set(obj, false) }
func (v *view) OnDelete(obj any)      { v.set(obj, true) }

func (v *view) state() map[string]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]string, len(v.objs))
	for k, rv := range v.objs {
		out[k] = rv
	}
	return out
}

// diffStates describes how got differs from want (at most three keys), or "".
func diffStates(got, want map[string]string) string {
	var d []string
	for k, rv := range want {
		if g, ok := got[k]; !ok {
			d = append(d, k+" missing")
		} else if g != rv {
			d = append(d, fmt.Sprintf("%s at RV %s, want %s", k, g, rv))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, k+" should be deleted")
		}
	}
	if len(d) == 0 {
		return ""
	}
	if len(d) > 3 {
		d = append(d[:3], fmt.Sprintf("and %d more", len(d)-3))
	}
	return fmt.Sprintf("%d objects, want %d: %s", len(got), len(want), strings.Join(d, "; "))
}
