package boltinformer

import (
	"testing"
	"time"
)

// The group-commit window is zero before any commit (nothing waits), the
// first commit's time whole, then a moving average weighing each commit
// 1/8, and never more than maxCoalesce.
func TestCommitTimeWindow(t *testing.T) {
	var c commitTime
	if w := c.window(); w != 0 {
		t.Fatalf("window before any commit %v, want 0", w)
	}
	c.observe(800 * time.Microsecond)
	if w := c.window(); w != 800*time.Microsecond {
		t.Fatalf("window after one commit of 800µs: %v", w)
	}
	c.observe(1600 * time.Microsecond)
	if w := c.window(); w != 900*time.Microsecond {
		t.Fatalf("window after commits of 800µs and 1.6ms: %v, want 900µs", w)
	}
	for range 100 {
		c.observe(time.Second)
	}
	if w := c.window(); w != maxCoalesce {
		t.Fatalf("window after slow commits %v, want the cap %v", w, maxCoalesce)
	}
}
