package testutil

import (
	"runtime"
	"strings"
)

// GoroutineIn reports whether some goroutine's stack holds every one of
// frames, as runtime.Stack prints them ("go.etcd.io/bbolt.(*DB).mmap(").
// A test that asserts a goroutine is blocked somewhere waits for it with
// Eventually(…, GoroutineIn(…)) rather than a sleep that guesses.
func GoroutineIn(frames ...string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		all := true
		for _, f := range frames {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}
