package listwatcher_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
	rt "github.com/boltinformer/boltinformer/internal/listwatcher/listwatchertest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestFirstActionIsAPagedConsistentList(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       listwatcher.Options
		wantReason listwatcher.RelistReason
	}{
		{"no stored RV", listwatcher.Options{}, listwatcher.RelistColdStart},
		{"stored RV 0", listwatcher.Options{StartRV: "0"}, listwatcher.RelistColdStart},
		{"must relist", listwatcher.Options{StartRV: "100", MustRelist: true}, listwatcher.RelistRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, tc.opts)
			req := h.nextList(listwatcher.DefaultPageSize, "")
			if got := h.r.LastSyncResourceVersion(); got != tc.opts.StartRV {
				t.Errorf("LastSyncResourceVersion() = %q during the list, want the stored %q", got, tc.opts.StartRV)
			}
			req.RespondList(page("200", "", "a"))
			h.nextWatch("200")
			expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1)", "EndRelist(200)")
			testutil.Eventually(t, "the watch from the list's RV is established", rt.Timeout, func() bool { return len(h.establishedRVs()) == 1 })
			if got := h.r.LastSyncResourceVersion(); got != "200" {
				t.Errorf("LastSyncResourceVersion() = %q, want the list's 200", got)
			}
			h.stop()
			m := h.metrics.snapshot()
			if !slices.Equal(m.relists, []listwatcher.RelistReason{tc.wantReason}) || m.resumes != 0 {
				t.Errorf("metrics %v, want one relist (%s) and no resumed watch", m, tc.wantReason)
			}
		})
	}
}

// TestUnusableRVRelistsInPages: a watch whose RV the apiserver no longer (or
// not yet) serves turns into a paged relist, then a watch from the list's RV.
func TestUnusableRVRelistsInPages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		asEvent  bool // the error arrives as the watch's ERROR event, else as the request's answer
		wantWhy  listwatcher.RelistReason
		isReason func(error) bool
	}{
		{"410 Expired event", expiredErr(), true, listwatcher.RelistExpired, apierrors.IsResourceExpired},
		{"410 Gone event", goneErr(), true, listwatcher.RelistExpired, apierrors.IsGone},
		{"410 Expired on request", expiredErr(), false, listwatcher.RelistExpired, apierrors.IsResourceExpired},
		{"too large RV event", tooLargeErr(), true, listwatcher.RelistTooLargeRV, apierrors.IsTimeout},
		{"too large RV on request", tooLargeErr(), false, listwatcher.RelistTooLargeRV, apierrors.IsTimeout},
		{"too large RV, 1.17 cause message", tooLargeCauseMessageErr(), true, listwatcher.RelistTooLargeRV, apierrors.IsTimeout},
		{"too large RV, pre-1.17 message", tooLargeMessageErr(), true, listwatcher.RelistTooLargeRV, apierrors.IsTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, listwatcher.Options{StartRV: "100", PageSize: 2})
			req := h.lw.Next(t)
			expectWatch(t, req, "100")
			if tc.asEvent {
				w := req.RespondWatch()
				w.Add(testutil.Pod("ns", "x", "101"))
				w.Error(status(tc.err))
			} else {
				req.RespondError(tc.err)
			}

			h.nextList(2, "").RespondList(page("300", "c1", "a", "b"))
			// Later pages of one list share its RV; different ones here show
			// that the first page's RV is the list's.
			h.nextList(2, "c1").RespondList(page("301", "c2", "c", "d"))
			h.nextList(2, "c2").RespondList(page("302", "", "e"))
			h.nextWatch("300")

			var want []string
			if tc.asEvent {
				want = append(want, "Add(x@101)")
			}
			want = append(want, "BeginRelist", "AddListPage(a@1,b@1)", "WaitBelow(2)",
				"AddListPage(c@1,d@1)", "WaitBelow(2)", "AddListPage(e@1)", "EndRelist(300)")
			expectCalls(t, h.sink, want...)
			testutil.Eventually(t, "the watch from the list's RV is established", rt.Timeout, func() bool {
				rvs := h.establishedRVs()
				return len(rvs) > 0 && rvs[len(rvs)-1] == "300"
			})

			if got := h.r.LastSyncResourceVersion(); got != "300" {
				t.Errorf("LastSyncResourceVersion() = %q, want 300", got)
			}
			h.stop()
			for _, c := range h.sink.Calls() {
				if c.Op == rt.OpBeginRelist && c.Reason != string(tc.wantWhy) {
					t.Errorf("BeginRelist got reason %q, want %q", c.Reason, tc.wantWhy)
				}
			}

			m := h.metrics.snapshot()
			if !slices.Equal(m.relists, []listwatcher.RelistReason{tc.wantWhy}) || !slices.Equal(m.pages, []int{2, 2, 1}) {
				t.Errorf("metrics %v, want one relist (%s) of pages 2 2 1", m, tc.wantWhy)
			}
			// Like any failure, an unusable RV costs a backoff step before the
			// relist: a server answering 410 at once cannot make it LIST in a loop.
			if len(m.backoffs) != 1 {
				t.Errorf("backoffs %v, want one before the relist", m.backoffs)
			}
			// Only an accepted watch counts, and the one after the relist is no resume.
			wantResumes := 0
			if tc.asEvent {
				wantResumes = 1
			}
			if m.resumes != wantResumes {
				t.Errorf("resumed watches = %d, want %d", m.resumes, wantResumes)
			}
			errs := h.errors()
			if len(errs) != 1 || !tc.isReason(errs[0]) {
				t.Errorf("reported errors %v, want the watch's error", errs)
			}
			if calls := h.lw.Calls(); len(calls) != 5 {
				t.Errorf("requests %v, want watch, 3 list pages, watch", calls)
			}
		})
	}
}

func TestExpiredContinueTokenRestartsListFromFirstPage(t *testing.T) {
	h := start(t, listwatcher.Options{PageSize: 2})
	h.nextList(2, "").RespondList(page("10", "c1", "a", "b"))
	h.nextList(2, "c1").RespondError(expiredErr())
	h.nextList(2, "").RespondList(page("20", "c2", "a", "b"))
	h.nextList(2, "c2").RespondList(page("20", "", "c"))
	h.nextWatch("20")
	expectCalls(t, h.sink,
		"BeginRelist", "AddListPage(a@1,b@1)", "WaitBelow(2)",
		"BeginRelist", "AddListPage(a@1,b@1)", "WaitBelow(2)", "AddListPage(c@1)", "EndRelist(20)")
	h.stop()
	if m := h.metrics.snapshot(); m.restarts != 1 || len(m.relists) != 1 || len(m.backoffs) != 0 {
		t.Errorf("metrics %v, want one relist restarted once without backoff", m)
	}
	if errs := h.errors(); len(errs) != 0 {
		t.Errorf("a restart is not an error, got %v", errs)
	}
}

func TestListRestartLimit(t *testing.T) {
	h := start(t, listwatcher.Options{PageSize: 1})
	for i := 0; i < 6; i++ {
		h.nextList(1, "").RespondList(page("10", "c", "a"))
		h.nextList(1, "c").RespondError(expiredErr())
	}
	// The sixth expiry gives up this relist; after a backoff, another begins.
	h.nextList(1, "").RespondList(page("30", "", "a"))
	h.nextWatch("30")
	h.stop()
	errs := h.errors()
	if len(errs) != 1 || !errors.Is(errs[0], listwatcher.ErrListRestartLimit) || !apierrors.IsResourceExpired(errs[0]) {
		t.Fatalf("reported errors %v, want ErrListRestartLimit wrapping the 410", errs)
	}
	m := h.metrics.snapshot()
	if m.restarts != 5 || len(m.relists) != 2 || len(m.backoffs) != 1 {
		t.Errorf("metrics %v, want 5 restarts, 2 relists, 1 backoff", m)
	}
}

func TestListErrorBacksOffAndRetries(t *testing.T) {
	h := start(t, listwatcher.Options{PageSize: 2, Backoff: &wait.Backoff{Duration: time.Second}})
	listErr := apierrors.NewInternalError(errors.New("etcd unavailable"))
	h.nextList(2, "").RespondList(page("10", "c1", "a", "b"))
	h.nextList(2, "c1").RespondError(listErr)

	h.waitForWaiter()
	h.lw.ExpectNoRequest(t, 20*time.Millisecond)
	h.clock.Step(time.Second)
	h.nextList(2, "").RespondList(page("20", "", "a"))
	h.nextWatch("20")
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1,b@1)", "WaitBelow(2)",
		"BeginRelist", "AddListPage(a@1)", "EndRelist(20)")
	errs := h.errors()
	if len(errs) != 1 || !apierrors.IsInternalError(errs[0]) {
		t.Errorf("reported errors %v, want the list's internal error", errs)
	}
}

func TestBackpressurePausesListBetweenPages(t *testing.T) {
	h := start(t, listwatcher.Options{PageSize: 2, MaxQueuedItems: 7})
	release := h.sink.BlockWaitBelow()
	defer release()
	h.nextList(2, "").RespondList(page("10", "c1", "a", "b"))
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1,b@1)", "WaitBelow(7)")

	// While the sink is full, the next page is not requested.
	h.lw.ExpectNoRequest(t, 100*time.Millisecond)
	release()
	h.nextList(2, "c1").RespondList(page("10", "", "c"))
	h.nextWatch("10")
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1,b@1)", "WaitBelow(7)", "AddListPage(c@1)", "EndRelist(10)")
}

func TestOversizedPageIsSplit(t *testing.T) {
	h := start(t, listwatcher.Options{PageSize: 2})
	// A server that ignores Limit.
	h.nextList(2, "").RespondList(page("10", "", "a", "b", "c", "d", "e"))
	h.nextWatch("10")
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1,b@1)", "WaitBelow(2)",
		"AddListPage(c@1,d@1)", "WaitBelow(2)", "AddListPage(e@1)", "EndRelist(10)")
}

func TestEmptyListEndsRelist(t *testing.T) {
	h := start(t, listwatcher.Options{})
	h.nextList(listwatcher.DefaultPageSize, "").RespondList(page("10", ""))
	h.nextWatch("10")
	expectCalls(t, h.sink, "BeginRelist", "EndRelist(10)")
}

func TestCancelDuringListReturnsPromptly(t *testing.T) {
	h := start(t, listwatcher.Options{})
	req := h.nextList(listwatcher.DefaultPageSize, "")
	h.stop()
	select {
	case <-req.Done():
	default:
		t.Errorf("the pending list request's context is not done")
	}
}

func TestCancelDuringWaitBelowReturnsPromptly(t *testing.T) {
	h := start(t, listwatcher.Options{PageSize: 1})
	release := h.sink.BlockWaitBelow()
	defer release()
	h.nextList(1, "").RespondList(page("10", "c1", "a"))
	h.sink.WaitForCalls(t, 3)
	h.stop()
	if errs := h.errors(); len(errs) != 0 {
		t.Errorf("cancellation reported as errors: %v", errs)
	}
}

func TestSinkErrorDuringRelistRelistsAgain(t *testing.T) {
	h := start(t, listwatcher.Options{PageSize: 2})
	sinkErr := errors.New("disk full")
	h.sink.FailNext(rt.OpAddListPage, sinkErr)
	h.nextList(2, "").RespondList(page("10", "c1", "a", "b"))
	// The relist is abandoned at the refused page and starts over.
	h.nextList(2, "").RespondList(page("20", "", "a"))
	h.nextWatch("20")
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1,b@1)", "BeginRelist", "AddListPage(a@1)", "EndRelist(20)")
	errs := h.errors()
	if len(errs) != 1 || !errors.Is(errs[0], listwatcher.ErrSink) || !errors.Is(errs[0], sinkErr) {
		t.Errorf("reported errors %v, want ErrSink wrapping the sink's error", errs)
	}
}
