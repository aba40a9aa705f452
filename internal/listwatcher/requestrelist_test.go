package listwatcher_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/boltinformer/boltinformer/internal/listwatcher"
)

// TestRequestRelistEndsTheWatch: RequestRelist during a watch ends it and
// relists with the requested reason, then watches from the list's RV.
func TestRequestRelistEndsTheWatch(t *testing.T) {
	h := start(t, listwatcher.Options{StartRV: "100"})
	h.nextWatch("100")
	h.r.RequestRelist(listwatcher.RelistDamagedRecord)
	h.nextList(listwatcher.DefaultPageSize, "").RespondList(page("120", "", "a"))
	h.nextWatch("120")
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1)", "EndRelist(120)")
	h.stop()
	want := []string{`watch rv="100"`, fmt.Sprintf(`list rv="" limit=%d`, listwatcher.DefaultPageSize), `watch rv="120"`}
	if got := callStrings(h.lw); !slices.Equal(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if m := h.metrics.snapshot(); !slices.Equal(m.relists, []listwatcher.RelistReason{listwatcher.RelistDamagedRecord}) {
		t.Errorf("metrics %v, want one relist (%s)", m, listwatcher.RelistDamagedRecord)
	}
	if errs := h.errors(); len(errs) != 0 {
		t.Errorf("errors reported: %v", errs)
	}
}
