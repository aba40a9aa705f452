package testutil

import (
	"context"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// Logger is a logger that writes to t (ktesting at its default
// verbosity), for Options.Logger and the like: a test logs to its own
// output, never to the process's klog, so a failing test's output holds its
// own lines only.
func Logger(t testing.TB) klog.Logger {
	return ktesting.NewLogger(t, ktesting.DefaultConfig)
}

// Context is context.Background() carrying Logger(t), for Run and the
// functions that log to klog.FromContext (ktesting.NewTestContext).
func Context(t testing.TB) context.Context {
	return klog.NewContext(context.Background(), Logger(t))
}
