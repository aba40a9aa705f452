package cachefile

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.RunChild(map[string]func() int{flipRole: flipChild})
	goleak.VerifyTestMain(m)
}
