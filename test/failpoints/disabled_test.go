//go:build !failpoints

package failpoints_test

import (
	"testing"

	"github.com/boltinformer/boltinformer/internal/failpoint"
)

// TestFailpointsCompiledOut proves a normal build carries no failpoint: a
// named point does nothing even when the environment names it.
func TestFailpointsCompiledOut(t *testing.T) {
	if failpoint.Enabled {
		t.Fatal("failpoint.Enabled is true in a build without the failpoints tag")
	}
	t.Setenv(failpoint.Env, "cachefile.beforeWrite")
	failpoint.Inject("cachefile.beforeWrite") // would SIGKILL this test binary if compiled in
}
