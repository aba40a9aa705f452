//go:build failpoints

package failpoints_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.RunChild(map[string]func() int{
		"informer": informerChild,
		"migrate":  migrateChild,
		"compact":  compactChild,
		"upgrade":  upgradeChild,
	})
	goleak.VerifyTestMain(m)
}
