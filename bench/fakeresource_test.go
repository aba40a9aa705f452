package bench

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// Every type of scenario 12 is served at its own endpoints in both
// formats: client-go's typed and dynamic informers sync each from the
// fake, see the updates spread over them, and only the expired
// resource's informer relists.
func TestFakeAPIServerResources(t *testing.T) {
	for _, js := range []bool{false, true} {
		t.Run(map[bool]string{false: "protobuf", true: "json"}[js], func(t *testing.T) {
			rs := MultiResources(300, 4)
			s, err := NewFakeAPIServer(FakeOptions{Resources: rs, Namespaces: 4, BookmarkInterval: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if s.N() != 300 {
				t.Fatalf("N %d, want 300", s.N())
			}
			var tr Traffic
			cfg := Target{Host: s.URL(), JSON: js}.RESTConfig(&tr)
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			typed, dynf := informers.NewSharedInformerFactory(cs, 0), dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
			infs := make([]cache.SharedIndexInformer, len(rs))
			for i, r := range rs {
				if r.JSONOnly {
					infs[i] = dynf.ForResource(r.GVR()).Informer()
					continue
				}
				gi, err := typed.ForResource(r.GVR())
				if err != nil {
					t.Fatal(err)
				}
				infs[i] = gi.Informer()
			}
			ctx, cancel := context.WithCancel(t.Context())
			typed.Start(ctx.Done())
			dynf.Start(ctx.Done())
			defer func() { cancel(); typed.Shutdown(); dynf.Shutdown() }()
			synced := func(i int) bool { return infs[i].HasSynced() && len(infs[i].GetStore().ListKeys()) == rs[i].N }
			for i, r := range rs {
				testutil.Eventually(t, r.Resource+" synced", 30*time.Second, func() bool { return synced(i) })
			}
			w := infs[len(infs)-1].GetStore().List()[0].(*unstructured.Unstructured)
			if w.GetKind() != "Widget" || w.GetAPIVersion() != WidgetGroup+"/v1" {
				t.Fatalf("widget %s %s", w.GetAPIVersion(), w.GetKind())
			}

			// Two updates per resource, each at its informer.
			_, last, err := s.update(2 * len(rs))
			if err != nil {
				t.Fatal(err)
			}
			if len(last) != len(rs) {
				t.Fatalf("updates touched %v, want every resource", last)
			}
			for i, r := range rs {
				testutil.Eventually(t, r.Resource+" updated", 30*time.Second, func() bool { return hasRV(infs[i], last[r.Resource]) })
			}

			// Expiring one resource's watches relists it alone.
			before := tr.Snapshot()
			if err := s.ExpireWatches("services"); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, "services relisted", 30*time.Second, func() bool { s := tr.Snapshot(); return s.Lists+s.WatchLists > before.Lists+before.WatchLists })
			if err := s.ExpireWatches("nothing"); err == nil {
				t.Fatal("expiring an unknown resource: no error")
			}

			// Paced publication keeps each event's time.
			if _, err := s.Prepare(24); err != nil {
				t.Fatal(err)
			}
			lastRV, err := s.PublishPaced(2000)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, "paced events published", 30*time.Second, func() bool { return len(s.Published().At) == 24 })
			p := s.Published()
			if p.From+23 != lastRV || p.At[0] > p.At[23] {
				t.Fatalf("published %d from %d, last %d", len(p.At), p.From, lastRV)
			}
		})
	}
}

// Bookmarks are of the watched kind: a typed watch drops any other.
func TestFakeAPIServerBookmarkKind(t *testing.T) {
	s, err := NewFakeAPIServer(FakeOptions{Resources: MultiResources(100, 2), Namespaces: 2, BookmarkInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cs, err := Target{Host: s.URL()}.Clientset(nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Nodes().Watch(t.Context(), metav1.ListOptions{ResourceVersion: itoa(s.Stats().RV), AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := <-w.ResultChan()
	if _, ok := ev.Object.(*v1.Node); ev.Type != watch.Bookmark || !ok {
		t.Fatalf("event %v %T, want a Node's bookmark", ev.Type, ev.Object)
	}
	if _, err := cs.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// hasRV reports whether the informer's store holds an object at rv.
func hasRV(inf cache.SharedIndexInformer, rv int64) bool {
	for _, o := range inf.GetStore().List() {
		if m, ok := o.(metav1.Object); ok && m.GetResourceVersion() == itoa(rv) {
			return true
		}
	}
	return false
}
