package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/reflector"
)

const (
	bulkConfigMaps = 5000
	bulkPods       = 1000
)

// bulk is a namespace of bulkConfigMaps ConfigMaps and bulkPods Pods
// (Pending: there is no kubelet) that the tests only read, created once.
var bulk struct {
	once sync.Once
	ns   string
}

func bulkNamespace(t *testing.T, cl *client) string {
	t.Helper()
	bulk.once.Do(func() {
		start := time.Now()
		ns := newNamespace(t, cl, "e2e-bulk")
		createConfigMaps(t, cl, ns, 0, bulkConfigMaps)
		createParallel(t, bulkPods, func(ctx context.Context, i int) error {
			_, err := cl.CoreV1().Pods(ns).Create(ctx, newPod(ns, i), metav1.CreateOptions{})
			return err
		})
		bulk.ns = ns
		t.Logf("created %d ConfigMaps and %d Pods in %v", bulkConfigMaps, bulkPods, time.Since(start).Round(time.Millisecond))
	})
	if bulk.ns == "" {
		t.Fatal("the bulk namespace could not be created (see the first test that used it)")
	}
	return bulk.ns
}

// TestColdStart syncs an empty cache file from 5k ConfigMaps and 1k Pods:
// every object reaches the handlers once, as part of the initial list, and
// the file then holds exactly what a fresh LIST returns, content included.
func TestColdStart(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := bulkNamespace(t, cl)

	path := filepath.Join(t.TempDir(), "cache.db")
	rc := startCache(t, cl, path, ns,
		configMapSpec(boltinformer.InformerOptions{}),
		informerSpec{resource: "pods", example: &v1.Pod{}},
	)
	for i, want := range []struct {
		resource string
		n        int
	}{{"configmaps", bulkConfigMaps}, {"pods", bulkPods}} {
		ri := rc.infs[i]
		t.Logf("%s: %v", want.resource, ri.lw.Calls())
		if ri.startRV != "" {
			t.Fatalf("%s: a new file has stored RV %q", want.resource, ri.startRV)
		}
		if n := ri.lw.count(call.isRelist); n != 1 {
			t.Errorf("%s: %d relists (LIST or WatchList stream), want 1: %v", want.resource, n, ri.lw.Calls())
		}
		perKey := map[string]int{}
		for _, e := range ri.rec.Events() {
			if e.typ != "add" || !e.initial {
				t.Fatalf("%s: cold start delivered %v, want only adds in the initial list", want.resource, e)
			}
			perKey[e.key]++
		}
		for k, n := range perKey {
			if n != 1 {
				t.Fatalf("%s: %s was added %d times", want.resource, k, n)
			}
		}
		if len(perKey) != want.n {
			t.Fatalf("%s: handler saw %d objects, want %d", want.resource, len(perKey), want.n)
		}
		assertSameObjects(t, want.resource+" cache vs LIST", listObjects(t, cl, want.resource, ns, metav1.ListOptions{}), storeObjects(ri.Informer))
		if rv, err := ri.Store().ResourceVersion(); err != nil || rv == "" {
			t.Fatalf("%s: stored RV %q after sync (%v)", want.resource, rv, err)
		}
	}
	info, err := rc.cache.Info()
	if err != nil {
		t.Fatal(err)
	}
	var stores []string
	for _, s := range info.Stores {
		stores = append(stores, fmt.Sprintf("%s:%d", s.Name, s.Objects))
	}
	sort.Strings(stores)
	if got, want := fmt.Sprint(stores), fmt.Sprintf("[ConfigMap.v1:%d Pod.v1:%d]", bulkConfigMaps, bulkPods); got != want {
		t.Fatalf("file holds stores %s, want %s", got, want)
	}
	rc.stop()
}

// TestPagedRelist relists 5k ConfigMaps with paged LISTs of 500 (WatchList
// off, and PageBytes off: 500 of these ConfigMaps weigh more than the
// default 256 KiB): at least 10 pages, each continuing the previous one,
// and the file equals the apiserver's list.
func TestPagedRelist(t *testing.T) {
	c := sharedCluster(t)
	cl := newClient(t, c)
	ns := bulkNamespace(t, cl)

	listsBefore := requestCount(t, c, "LIST", "configmaps")
	rc := startCache(t, cl, filepath.Join(t.TempDir(), "cache.db"), ns,
		configMapSpec(boltinformer.InformerOptions{PageSize: 500, PageBytes: -1, WatchList: reflector.WatchListOff}))
	lists := requestCount(t, c, "LIST", "configmaps") - listsBefore
	ri := rc.infs[0]

	var pages []call
	for _, req := range ri.lw.Calls() {
		if req.verb == "LIST" {
			pages = append(pages, req)
		}
		if req.isWatchList() {
			t.Fatalf("WatchListOff made a WatchList request: %v", req)
		}
	}
	if len(pages) < bulkConfigMaps/500 {
		t.Fatalf("relist of %d objects made %d LIST requests, want at least %d pages: %v", bulkConfigMaps, len(pages), bulkConfigMaps/500, pages)
	}
	for i, p := range pages {
		if p.opts.Limit != 500 || (i == 0) != (p.opts.Continue == "") {
			t.Fatalf("page %d: %v; want limit=500, a continue token on every page but the first", i, p)
		}
	}
	if lists < float64(len(pages)) {
		t.Fatalf("the apiserver counted %v LIST configmaps requests, the informer made %d", lists, len(pages))
	}
	t.Logf("%d pages, apiserver counted %v LISTs", len(pages), lists)
	assertSameObjects(t, "cache vs LIST", listObjects(t, cl, "configmaps", ns, metav1.ListOptions{}), storeObjects(ri.Informer))
	rc.stop()
}
