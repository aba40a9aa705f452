package processor

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(panicChildEnv) != "" {
		panicChild()
		return
	}
	goleak.VerifyTestMain(m)
}
