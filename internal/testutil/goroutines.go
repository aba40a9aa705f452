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
	return CountGoroutines(func(stack string) bool {
		for _, f := range frames {
			if !strings.Contains(stack, f) {
				return false
			}
		}
		return true
	}) > 0
}

// CountGoroutines returns how many goroutines have a stack, as
// runtime.Stack prints it, that match accepts: a test that waits for n
// callers to block somewhere waits until n stacks show it.
func CountGoroutines(match func(stack string) bool) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if match(g) {
			count++
		}
	}
	return count
}
