//go:build !unix

package cachefile

import "time"

// lockShared does nothing where flock does not exist; bbolt's own lock
// still guards the open that follows.
func lockShared(string, time.Duration) (func(), error) { return func() {}, nil }
