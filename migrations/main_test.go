package migrations_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.RunChild(crashRoles)
	goleak.VerifyTestMain(m)
}
