package reflector_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/boltinformer/boltinformer/reflector"
)

// TestRequestRelistEndsTheWatch: RequestRelist during a watch ends it and
// relists with the requested reason, then watches from the list's RV.
func TestRequestRelistEndsTheWatch(t *testing.T) {
	h := start(t, reflector.Options{StartRV: "100"})
	h.nextWatch("100")
	h.r.RequestRelist(reflector.RelistDamagedRecord)
	h.nextList(reflector.DefaultPageSize, "").RespondList(page("120", "", "a"))
	h.nextWatch("120")
	expectCalls(t, h.sink, "BeginRelist", "AddListPage(a@1)", "EndRelist(120)")
	h.stop()
	want := []string{`watch rv="100"`, fmt.Sprintf(`list rv="" limit=%d`, reflector.DefaultPageSize), `watch rv="120"`}
	if got := callStrings(h.lw); !slices.Equal(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if m := h.metrics.snapshot(); !slices.Equal(m.relists, []reflector.RelistReason{reflector.RelistDamagedRecord}) {
		t.Errorf("metrics %v, want one relist (%s)", m, reflector.RelistDamagedRecord)
	}
	if errs := h.errors(); len(errs) != 0 {
		t.Errorf("errors reported: %v", errs)
	}
}
