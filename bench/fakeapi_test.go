package bench

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
)

func startFake(t testing.TB, n int) *FakeAPIServer {
	t.Helper()
	s, err := NewFakeAPIServer(FakeOptions{N: n, Namespaces: 10, BookmarkInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The fake's wire format is what client-go decodes: pages, watches from an
// RV, WatchList, 410, in protobuf and JSON.
func TestFakeAPIServerWire(t *testing.T) {
	for _, js := range []bool{false, true} {
		name := map[bool]string{false: "protobuf", true: "json"}[js]
		t.Run(name, func(t *testing.T) {
			s := startFake(t, 120)
			var tr Traffic
			cs, err := Target{Host: s.URL(), JSON: js}.Clientset(&tr)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			pods := cs.CoreV1().Pods("")

			// Paged list, and its items equal the generated Pods.
			p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) })
			p.PageSize = 50
			var got []*v1.Pod
			if err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
				got = append(got, obj.(*v1.Pod))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != 120 || tr.Lists.Load() != 3 {
				t.Fatalf("listed %d in %d pages", len(got), tr.Lists.Load())
			}
			want := Pod(3, 10, 4)
			for _, g := range got {
				if g.Name == want.Name {
					if g.Spec.Containers[1].Resources.Limits.Memory().String() != "512Mi" || g.ResourceVersion != "4" || len(g.ManagedFields) != 2 {
						t.Fatalf("pod %s decoded wrong: %+v", g.Name, g.ObjectMeta)
					}
				}
			}
			nsList, err := cs.CoreV1().Pods("team-003").List(ctx, metav1.ListOptions{})
			if err != nil || len(nsList.Items) != 12 {
				t.Fatalf("namespace list: %v %d", err, len(nsList.Items))
			}

			// A watch from the list RV sees updates and bookmarks.
			w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: "120", AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Update(3); err != nil {
				t.Fatal(err)
			}
			var mods, bms int
			for mods < 3 || bms < 1 {
				ev := <-w.ResultChan()
				switch ev.Type {
				case watch.Modified:
					mods++
				case watch.Bookmark:
					bms++
				default:
					t.Fatalf("unexpected event %v", ev)
				}
			}
			w.Stop()

			// WatchList: every object ADDED, then the annotated bookmark.
			w, err = pods.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptrTo(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			added := 0
			for {
				ev := <-w.ResultChan()
				if ev.Type == watch.Added {
					added++
					continue
				}
				if ev.Type != watch.Bookmark || ev.Object.(*v1.Pod).Annotations[metav1.InitialEventsAnnotationKey] != "true" {
					t.Fatalf("unexpected event %v", ev.Type)
				}
				break
			}
			if added != 120 {
				t.Fatalf("watch-list added %d", added)
			}
			// Expiry ends the watch with 410.
			if _, err := s.ExpireAndUpdate(2); err != nil {
				t.Fatal(err)
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					st := ev.Object.(*metav1.Status)
					if st.Code != 410 {
						t.Fatalf("status %+v", st)
					}
					break
				}
			}
			w.Stop()
			if tr.BytesReceived.Load() == 0 || tr.WatchLists.Load() != 1 {
				t.Fatalf("traffic %+v", tr.Snapshot())
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// client-go's informer syncs from the fake and relists after an expiry.
func TestFakeAPIServerInformer(t *testing.T) {
	s := startFake(t, 300)
	cs, err := Target{Host: s.URL()}.Clientset(nil)
	if err != nil {
		t.Fatal(err)
	}
	inf := cache.NewSharedIndexInformer(PodListWatch(cs, "", ""), &v1.Pod{}, 0, podIndexers())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { inf.RunWithContext(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	if n := len(inf.GetStore().ListKeys()); n != 300 {
		t.Fatalf("%d keys", n)
	}
	rv, err := s.ExpireAndUpdate(5)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for inf.LastSyncResourceVersion() != itoa(rv) {
		if time.Now().After(deadline) {
			t.Fatalf("no relist to %d: at %s", rv, inf.LastSyncResourceVersion())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := s.Stats(); st.WatchLists < 2 {
		t.Fatalf("stats %+v", st)
	}
}
