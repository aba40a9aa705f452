package bench

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs this test binary as a benchmark child when the driver
// (TestReport) re-executes it, and checks for leaked goroutines otherwise.
func TestMain(m *testing.M) {
	if isChild, code := ChildMain(); isChild {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m,
		// client-go's and controller-runtime's idle HTTP/2 and keep-alive
		// connections end on their own timers.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	)
}
