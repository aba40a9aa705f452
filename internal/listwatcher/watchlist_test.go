package listwatcher_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
	rt "github.com/boltinformer/boltinformer/internal/listwatcher/listwatchertest"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

func expectWatchList(t *testing.T, req *rt.Request) {
	t.Helper()
	o := req.Options
	if req.Verb != rt.VerbWatch || o.ResourceVersion != "" || o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan ||
		o.SendInitialEvents == nil || !*o.SendInitialEvents || !o.AllowWatchBookmarks {
		t.Fatalf("request = %v (match %q, bookmarks %t), want a watch-list", req.Call, o.ResourceVersionMatch, o.AllowWatchBookmarks)
	}
	if o.TimeoutSeconds == nil || o.Limit != 0 || o.Continue != "" {
		t.Errorf("watch-list options %+v", o)
	}
}

func TestWatchListStreamsInitialEventsInPages(t *testing.T) {
	h := start(t, listwatcher.Options{WatchList: reflector.WatchListOn, PageSize: 2})
	req := h.lw.Next(t)
	expectWatchList(t, req)
	w := req.RespondWatch()
	release := h.sink.BlockWaitBelow()
	defer release()

	// Initial events come in no RV order.
	w.Add(testutil.Pod("ns", "a", "5"))
	w.Add(testutil.Pod("ns", "b", "3"))
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@5,b@3)", "WaitBelow(2)")
	// While the sink is full, the stream is not read.
	if w.TrySend(watch.Event{Type: watch.Added, Object: testutil.Pod("ns", "c", "9")}, 100*time.Millisecond) {
		t.Fatalf("the stream was read while WaitBelow blocked")
	}
	release()
	w.Add(testutil.Pod("ns", "c", "9"))
	w.Add(testutil.Pod("ns", "d", "1"))
	w.Add(testutil.Pod("ns", "e", "7"))
	if got := h.r.LastSyncResourceVersion(); got != "" {
		t.Errorf("LastSyncResourceVersion() = %q during initial events, want none", got)
	}
	if got := h.establishedRVs(); len(got) != 0 {
		t.Errorf("OnWatchEstablished(%v) before the initial-events-end bookmark", got)
	}
	w.Bookmark(initialEventsEnd("20"))
	// The same stream goes on as the watch.
	w.Modify(testutil.Pod("ns", "a", "21"))
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@5,b@3)", "WaitBelow(2)",
		"AddListPage(c@9,d@1)", "WaitBelow(2)", "AddListPage(e@7)", "EndRelist(20)", "Update(a@21)")
	testutil.Eventually(t, "the event's RV is the last synced", rt.Timeout, func() bool { return h.r.LastSyncResourceVersion() == "21" })
	if got := h.establishedRVs(); !slices.Equal(got, []string{"20"}) {
		t.Errorf("OnWatchEstablished calls %v, want 20", got)
	}

	h.stop()
	if !w.IsStopped() {
		t.Errorf("stream not stopped")
	}
	if calls := h.lw.Calls(); len(calls) != 1 {
		t.Errorf("requests %v, want only the watch-list", calls)
	}
	m := h.metrics.snapshot()
	if !slices.Equal(m.relists, []listwatcher.RelistReason{listwatcher.RelistColdStart}) || !slices.Equal(m.pages, []int{2, 2, 1}) || m.fallbacks != 0 {
		t.Errorf("metrics %v, want one cold relist of pages 2 2 1 without fallback", m)
	}
}

func TestWatchListFallsBackToPagedList(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fail makes the watch-list fail and returns the sink calls it caused.
		fail func(req *rt.Request) []string
	}{
		{"request refused", func(req *rt.Request) []string {
			req.RespondError(apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"))
			return nil
		}},
		{"stream ends before initial-events-end", func(req *rt.Request) []string {
			w := req.RespondWatch()
			w.Add(testutil.Pod("ns", "a", "5"))
			w.Close()
			return []string{"BeginRelist"}
		}},
		{"plain bookmark before initial-events-end", func(req *rt.Request) []string {
			w := req.RespondWatch()
			w.Add(testutil.Pod("ns", "a", "5"))
			w.Bookmark(bookmark("7"))
			return []string{"BeginRelist"}
		}},
		{"MODIFIED before initial-events-end", func(req *rt.Request) []string {
			w := req.RespondWatch()
			w.Add(testutil.Pod("ns", "a", "5"))
			w.Add(testutil.Pod("ns", "b", "6"))
			w.Modify(testutil.Pod("ns", "a", "8"))
			return []string{"BeginRelist", "AddListPage(a@5,b@6)", "WaitBelow(2)"}
		}},
		{"error event", func(req *rt.Request) []string {
			w := req.RespondWatch()
			w.Error(status(apierrors.NewInternalError(errors.New("boom"))))
			return []string{"BeginRelist"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, listwatcher.Options{WatchList: reflector.WatchListOn, PageSize: 2})
			req := h.lw.Next(t)
			expectWatchList(t, req)
			want := tc.fail(req)

			h.nextList(2, "").RespondList(page("30", "", "x"))
			h.nextWatch("30")
			want = append(want, "BeginRelist", "AddListPage(x@1)", "EndRelist(30)")
			expectCalls(t, h.sink, want...)
			h.stop()
			if m := h.metrics.snapshot(); m.fallbacks != 1 || len(m.relists) != 1 {
				t.Errorf("metrics %v, want one relist with one fallback", m)
			}
		})
	}
}

func TestWarmStartResumesEvenWithWatchList(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100", WatchList: reflector.WatchListOn})
	h.lw.Next(t).RespondError(expiredErr())
	// The relist streams.
	expectWatchList(t, h.lw.Next(t))
}

func TestWatchListAuto(t *testing.T) {
	t.Run("client without WatchList semantics", func(t *testing.T) {
		h := startWith(t, listwatcher.Options{}, setup{autoWatchList: true, watchListUnsupported: true})
		h.nextList(listwatcher.DefaultPageSize, "")
	})
	t.Run("client with WatchList semantics", func(t *testing.T) {
		h := startWith(t, listwatcher.Options{}, setup{autoWatchList: true})
		req := h.lw.Next(t)
		if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
			expectWatchList(t, req)
		} else {
			expectList(t, req, listwatcher.DefaultPageSize, "")
		}
	})
}
