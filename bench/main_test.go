package bench

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs this test binary as a benchmark child when the driver
// (TestReport) re-executes it, or as TestMemoryCgroup's allocating child;
// otherwise it runs the tests and benchmarks,
// stops the readers the read benchmarks share, and checks for leaked
// goroutines.
func TestMain(m *testing.M) {
	if isChild, code := ChildMain(); isChild {
		os.Exit(code)
	}
	if allocChild() {
		os.Exit(0)
	}
	code := m.Run()
	closeSharedReadEnv()
	if code == 0 {
		if err := goleak.Find(
			// Idle keep-alive connections of the HTTP clients end on their own timers.
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
			goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
