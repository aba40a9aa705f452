package bench

import (
	"strings"
	"testing"
)

// TestProfiledHeapRowsAreNotJudged: a profiled child's peak heap holds the
// profilers' own buffers, so its rows show the target without judging it;
// the same figures from an unprofiled child are judged.
func TestProfiledHeapRowsAreNotJudged(t *testing.T) {
	for _, profiled := range []bool{false, true} {
		res := &Results{Children: map[string]Result{
			"sync/fake/10000/client-go":    {HeapPeakSync: 200 << 20, HeapPeakRelist: 400 << 20},
			"sync/fake/10000/boltinformer": {HeapPeakSync: 20 << 20, HeapPeakRelist: 20 << 20, Profiled: profiled},
		}}
		n := 0
		for _, r := range Rows(res) {
			if !strings.HasPrefix(r.Metric, "peak Go heap") {
				continue
			}
			n++
			judged := r.Met != ""
			if judged == profiled || profiled != strings.Contains(r.Target, "not judged") {
				t.Errorf("profiled %v: row %q target %q met %q", profiled, r.Metric, r.Target, r.Met)
			}
		}
		if n != 2 {
			t.Errorf("profiled %v: %d peak-heap rows, want 2", profiled, n)
		}
	}
}
