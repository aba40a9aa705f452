package listwatcher_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
	rt "github.com/boltinformer/boltinformer/internal/listwatcher/listwatchertest"
	"github.com/boltinformer/boltinformer/internal/testutil"
	"github.com/boltinformer/boltinformer/reflector"
)

func TestWarmStartWatchesFromStoredRVWithoutList(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100"})

	req := h.lw.Next(t)
	expectWatch(t, req, "100")
	if got := h.establishedRVs(); len(got) != 0 {
		t.Fatalf("OnWatchEstablished(%v) before the watch was answered", got)
	}
	if got := h.r.LastSyncResourceVersion(); got != "100" {
		t.Errorf("LastSyncResourceVersion() = %q before any event, want the stored 100", got)
	}
	w := req.RespondWatch()
	testutil.Eventually(t, "OnWatchEstablished is called", rt.Timeout, func() bool { return len(h.establishedRVs()) == 1 })
	if got := h.establishedRVs(); got[0] != "100" {
		t.Errorf("OnWatchEstablished(%q), want 100", got[0])
	}

	w.Add(testutil.Pod("ns", "a", "101"))
	w.Modify(testutil.Pod("ns", "a", "102"))
	w.Delete(testutil.Pod("ns", "b", "103"))
	w.Bookmark(bookmark("104"))
	expectCalls(t, h.sink, "Add(a@101)", "Update(a@102)", "Delete(b@103)", "Bookmark(104)")
	testutil.Eventually(t, "the bookmark's RV is the last synced", rt.Timeout, func() bool { return h.r.LastSyncResourceVersion() == "104" })

	h.stop()
	if !w.IsStopped() {
		t.Errorf("watch not stopped when Run returned")
	}
	if calls := h.lw.Calls(); len(calls) != 1 {
		t.Errorf("requests = %v, want only the watch from 100", calls)
	}
	if m := h.metrics.snapshot(); m.resumes != 1 || len(m.relists) != 0 {
		t.Errorf("metrics %v, want one resumed watch and no relist", m)
	}
}

func TestEventsAndBookmarksAdvanceLastSyncResourceVersion(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "10"})
	w := h.nextWatch("10")
	steps := []struct {
		send func() bool
		rv   string
	}{
		{func() bool { return w.Add(testutil.Pod("ns", "a", "11")) }, "11"},
		{func() bool { return w.Bookmark(bookmark("15")) }, "15"},
		{func() bool { return w.Modify(testutil.Pod("ns", "a", "16")) }, "16"},
		{func() bool { return w.Bookmark(bookmark("20")) }, "20"},
		{func() bool { return w.Delete(testutil.Pod("ns", "a", "21")) }, "21"},
	}
	for i, s := range steps {
		if !s.send() {
			t.Fatalf("event %d not received", i)
		}
		h.sink.WaitForCalls(t, i+1)
		testutil.Eventually(t, "LastSyncResourceVersion is "+s.rv, rt.Timeout, func() bool { return h.r.LastSyncResourceVersion() == s.rv })
	}
	expectCalls(t, h.sink, "Add(a@11)", "Bookmark(15)", "Update(a@16)", "Bookmark(20)", "Delete(a@21)")
}

func TestWatchClosedNormallyRewatchesFromLastRV(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100"})
	w := h.nextWatch("100")
	w.Add(testutil.Pod("ns", "a", "101"))
	w.Bookmark(bookmark("105"))
	w.Close()

	w = h.nextWatch("105")
	w.Modify(testutil.Pod("ns", "a", "106"))
	w.Close()

	h.nextWatch("106")
	expectCalls(t, h.sink, "Add(a@101)", "Bookmark(105)", "Update(a@106)")
	testutil.Eventually(t, "the third watch is established", rt.Timeout, func() bool { return len(h.establishedRVs()) == 3 })
	h.stop()
	expectNoLists(t, h.lw)
	m := h.metrics.snapshot()
	if len(m.backoffs) != 0 || m.resumes != 3 || m.closes != 2 || len(m.failures) != 0 {
		t.Errorf("metrics %v, want 3 resumed watches, 2 closes, no failure and no backoff", m)
	}
	if errs := h.errors(); len(errs) != 0 {
		t.Errorf("errors reported for normal closes: %v", errs)
	}
	if got := h.establishedRVs(); !slices.Equal(got, []string{"100", "105", "106"}) {
		t.Errorf("OnWatchEstablished calls %v, want 100 105 106", got)
	}
}

func TestVeryShortWatchBacksOff(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100", Backoff: &wait.Backoff{Duration: time.Second}})
	w := h.nextWatch("100")
	w.Close() // no event, no time passed

	h.waitForWaiter()
	h.lw.ExpectNoRequest(t, 20*time.Millisecond)
	h.clock.Step(time.Second)
	h.nextWatch("100")
	errs := h.errors()
	if len(errs) != 1 || !errors.Is(errs[0], listwatcher.ErrVeryShortWatch) {
		t.Errorf("reported errors %v, want ErrVeryShortWatch", errs)
	}
	if m := h.metrics.snapshot(); m.closes != 0 || len(m.failures) != 1 || !errors.Is(m.failures[0], listwatcher.ErrVeryShortWatch) {
		t.Errorf("metrics %v, want one failure (ErrVeryShortWatch) and no close", m)
	}
}

func TestSinkErrorRewatchesFromLastAcceptedRV(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100"})
	w := h.nextWatch("100")
	w.Add(testutil.Pod("ns", "a", "101"))
	sinkErr := errors.New("queue closed")
	h.sink.FailNext(rt.OpUpdate, sinkErr)
	w.Modify(testutil.Pod("ns", "a", "102"))

	// The refused event is not counted as seen: the next watch replays it.
	w2 := h.nextWatch("101")
	if !w.IsStopped() {
		t.Errorf("failed watch not stopped")
	}
	w2.Modify(testutil.Pod("ns", "a", "102"))
	expectCalls(t, h.sink, "Add(a@101)", "Update(a@102)", "Update(a@102)")
	errs := h.errors()
	if len(errs) != 1 || !errors.Is(errs[0], listwatcher.ErrSink) || !errors.Is(errs[0], sinkErr) {
		t.Errorf("reported errors %v, want ErrSink wrapping the sink's error", errs)
	}
	expectNoLists(t, h.lw)
}

func TestWatchDropsObjectsOfAnotherType(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100"})
	w := h.nextWatch("100")
	w.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", ResourceVersion: "101"}})
	w.Add(testutil.Pod("ns", "a", "102"))
	expectCalls(t, h.sink, "Add(a@102)")
	testutil.Eventually(t, "the pod's RV is the last synced", rt.Timeout, func() bool { return h.r.LastSyncResourceVersion() == "102" })
	if calls := h.sink.Strings(); len(calls) != 1 {
		t.Errorf("sink calls %v, want only the pod", calls)
	}
}

func TestWatchDropsUnstructuredOfAnotherGVK(t *testing.T) {
	lw := rt.NewListerWatcher()
	sink := rt.NewSink()
	expected := &unstructured.Unstructured{}
	expected.SetAPIVersion("apps/v1")
	expected.SetKind("Deployment")
	r := listwatcher.New(lw, expected, sink, listwatcher.Options{StartRV: "100", WatchList: reflector.WatchListOff})
	if got := r.TypeDescription(); got != "apps/v1, Kind=Deployment" {
		t.Errorf("TypeDescription() = %q", got)
	}
	ctx, cancel := context.WithCancel(testutil.Context(t))
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	w := lw.Next(t).RespondWatch()
	obj := func(apiVersion, kind, name, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		u.SetResourceVersion(rv)
		return u
	}
	w.Add(obj("v1", "Pod", "p", "101"))
	w.Add(obj("apps/v1", "Deployment", "d", "102"))
	expectCalls(t, sink, "Add(d@102)")
}

func TestCancelDuringWatchReturnsPromptly(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100"})
	w := h.nextWatch("100")
	w.Add(testutil.Pod("ns", "a", "101"))
	h.sink.WaitForCalls(t, 1)
	h.stop()
	if !w.IsStopped() {
		t.Errorf("watch not stopped")
	}
}

func TestCancelWhileWatchRequestPendingReturnsPromptly(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100"})
	req := h.lw.Next(t)
	h.stop()
	select {
	case <-req.Done():
	default:
		t.Errorf("the pending watch request's context is not done")
	}
}

func TestCancelDuringBackoffReturnsPromptly(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100", Backoff: &wait.Backoff{Duration: time.Hour}})
	h.lw.Next(t).RespondError(tooManyRequestsErr())
	h.waitForWaiter()
	h.stop()
}

func TestRunTwice(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100"})
	h.lw.Next(t)
	if err := h.r.Run(context.Background()); !errors.Is(err, listwatcher.ErrAlreadyRunning) {
		t.Errorf("second Run = %v, want ErrAlreadyRunning", err)
	}
}
