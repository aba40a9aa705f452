package bench

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

func TestPodIsAboutEightKB(t *testing.T) {
	b, err := json.Marshal(Pod(12345, 100, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 6500 || len(b) > 10000 {
		t.Fatalf("generated pod is %d bytes of JSON, want about 8 KB", len(b))
	}
}

// TestPodStatusUpdateChangesOnlyTheStatus: the fake's updates leave spec,
// labels and owners as Pod made them and change the status, which differs
// from one update of a Pod to the next.
func TestPodStatusUpdateChangesOnlyTheStatus(t *testing.T) {
	base := Pod(12345, 100, 1)
	a, b := PodStatusUpdate(12345, 100, 1001), PodStatusUpdate(12345, 100, 1002)
	if !equality.Semantic.DeepEqual(base.Spec, a.Spec) || !equality.Semantic.DeepEqual(base.Labels, a.Labels) ||
		!equality.Semantic.DeepEqual(base.OwnerReferences, a.OwnerReferences) {
		t.Fatal("a status update changed the spec, labels or owners")
	}
	if equality.Semantic.DeepEqual(base.Status, a.Status) || equality.Semantic.DeepEqual(a.Status, b.Status) ||
		equality.Semantic.DeepEqual(a.ManagedFields, b.ManagedFields) {
		t.Fatal("consecutive status updates leave the status or the managed fields as they were")
	}
	if a.ResourceVersion != "1001" {
		t.Fatalf("resourceVersion %q, want 1001", a.ResourceVersion)
	}
}
