package listwatcher_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
	rt "github.com/boltinformer/boltinformer/internal/listwatcher/listwatchertest"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// nextProbe takes the next request and checks it is the resume check: a
// consistent LIST (RV "") with Limit=1 and no continue token.
func (h *harness) nextProbe() *rt.Request {
	h.t.Helper()
	return h.nextList(1, "")
}

// TestResumeCheckThenWatchFromStoredRV: with CheckResumeRV, a warm start
// makes exactly one LIST limit=1 and then the WATCH from the stored RV; a
// re-watch after the watch ends checks again; a watch right after a relist
// does not.
func TestResumeCheckThenWatchFromStoredRV(t *testing.T) {
	for _, tc := range []struct{ name, clusterRV string }{
		{"cluster ahead", "150"},
		{"cluster at the stored RV", "100"},
		{"RV not an integer", "abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, listwatcher.Options{StartRV: "100", CheckResumeRV: true})
			h.nextProbe().RespondList(page(tc.clusterRV, "", "a"))
			w := h.nextWatch("100")
			w.Add(testutil.Pod("ns", "a", "101"))
			w.Close()
			h.nextProbe().RespondList(page("160", ""))
			h.nextWatch("101")
			expectCalls(t, h.sink, "Add(a@101)")
			testutil.Eventually(t, "the second watch is established", rt.Timeout, func() bool { return len(h.establishedRVs()) == 2 })
			h.stop()
			want := []string{`list rv="" limit=1`, `watch rv="100"`, `list rv="" limit=1`, `watch rv="101"`}
			if got := callStrings(h.lw); !slices.Equal(got, want) {
				t.Fatalf("requests %v, want %v", got, want)
			}
			if m := h.metrics.snapshot(); len(m.relists) != 0 || m.resumes != 2 {
				t.Errorf("metrics %v, want two resumed watches and no relist", m)
			}
			if errs := h.errors(); len(errs) != 0 {
				t.Errorf("errors reported: %v", errs)
			}
		})
	}
}

// TestResumeCheckRVAheadRelists: a stored RV ahead of the cluster's (an etcd
// restore, another cluster) is never watched from: the reflector reports
// ErrResourceVersionAhead, relists with reason rv_ahead_of_cluster, and
// watches from the list's RV without another check.
func TestResumeCheckRVAheadRelists(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "900", CheckResumeRV: true})
	h.nextProbe().RespondList(page("40", "", "a"))
	h.nextList(listwatcher.DefaultPageSize, "").RespondList(page("41", "", "a", "b"))
	h.nextWatch("41")
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1,b@1)", "EndRelist(41)")
	h.stop()
	want := []string{`list rv="" limit=1`, fmt.Sprintf(`list rv="" limit=%d`, listwatcher.DefaultPageSize), `watch rv="41"`}
	if got := callStrings(h.lw); !slices.Equal(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if m := h.metrics.snapshot(); !slices.Equal(m.relists, []listwatcher.RelistReason{listwatcher.RelistRVAhead}) || m.resumes != 0 {
		t.Errorf("metrics %v, want one relist (%s) and no resumed watch", m, listwatcher.RelistRVAhead)
	}
	if errs := h.errors(); len(errs) != 1 || !errors.Is(errs[0], listwatcher.ErrResourceVersionAhead) {
		t.Errorf("reported errors %v, want ErrResourceVersionAhead", errs)
	}
}

// TestResumeCheckOnRewatchAfterFailure: after a watch fails (the apiserver
// went away and came back from an older etcd), the re-watch is checked too,
// and a failed check backs off and checks again before any WATCH.
func TestResumeCheckOnRewatchAfterFailure(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100", CheckResumeRV: true})
	h.nextProbe().RespondList(page("100", ""))
	w := h.nextWatch("100")
	w.Modify(testutil.Pod("ns", "a", "120"))
	w.Error(status(tooManyRequestsErr()))
	h.nextProbe().RespondError(tooManyRequestsErr())
	h.nextProbe().RespondList(page("7", ""))
	h.nextList(listwatcher.DefaultPageSize, "").RespondList(page("8", "", "a"))
	h.nextWatch("8")
	expectCalls(t, h.sink, "Update(a@120)", "BeginRelist", "AddListPage(a@1)", "EndRelist(8)")
	h.stop()
	want := []string{`list rv="" limit=1`, `watch rv="100"`, `list rv="" limit=1`, `list rv="" limit=1`, fmt.Sprintf(`list rv="" limit=%d`, listwatcher.DefaultPageSize), `watch rv="8"`}
	if got := callStrings(h.lw); !slices.Equal(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if m := h.metrics.snapshot(); !slices.Equal(m.relists, []listwatcher.RelistReason{listwatcher.RelistRVAhead}) {
		t.Errorf("metrics %v, want one relist (%s)", m, listwatcher.RelistRVAhead)
	}
}

// TestMustRelistReason: an explicit reason is reported for the first
// relist, also without a stored RV.
func TestMustRelistReason(t *testing.T) {
	h := start(t, listwatcher.Options{MustRelist: true, MustRelistReason: listwatcher.RelistClusterChanged, CheckResumeRV: true})
	h.nextList(listwatcher.DefaultPageSize, "").RespondList(page("5", ""))
	h.nextWatch("5")
	h.stop()
	if m := h.metrics.snapshot(); !slices.Equal(m.relists, []listwatcher.RelistReason{listwatcher.RelistClusterChanged}) {
		t.Errorf("metrics %v, want one relist (%s)", m, listwatcher.RelistClusterChanged)
	}
}

func callStrings(lw *rt.ListerWatcher) []string {
	var out []string
	for _, c := range lw.Calls() {
		out = append(out, c.String())
	}
	return out
}
