package snapshot_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(crashRoleEnv); role != "" {
		os.Exit(runCrashChild(role))
	}
	goleak.VerifyTestMain(m)
}
