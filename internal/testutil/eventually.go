package testutil

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails the test if it does not
// within timeout. The timeout bounds a hang; it measures nothing.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	EventuallyDiff(t, what, timeout, func() string {
		if cond() {
			return ""
		}
		return "the condition does not hold"
	})
}

// EventuallyDiff polls diff until it returns "", and fails the test with
// the last thing diff reported if that does not happen within timeout.
// It polls at 1 ms, doubling up to every 100 ms, so a quick condition is
// seen at once and a slow one (a LIST against an apiserver) is not
// hammered.
func EventuallyDiff(t testing.TB, what string, timeout time.Duration, diff func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for interval := time.Millisecond; ; interval = min(2*interval, 100*time.Millisecond) {
		last := diff()
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, last)
		}
		time.Sleep(interval)
	}
}
