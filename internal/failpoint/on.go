//go:build failpoints

package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Enabled reports whether this build has failpoints compiled in.
const Enabled = true

var (
	parse  sync.Once
	target string
	nth    int64
	mu     sync.Mutex
	hits   int64

	sleepAt  string
	sleepFor time.Duration
)

// Inject kills the process with SIGKILL when Env names this failpoint
// (at its Nth hit for NAME@N), and sleeps when SleepEnv names it.
func Inject(name string) {
	parse.Do(func() {
		v := os.Getenv(Env)
		target, nth = v, 1
		if i := strings.LastIndexByte(v, '@'); i >= 0 {
			if n, err := strconv.ParseInt(v[i+1:], 10, 64); err == nil && n > 0 {
				target, nth = v[:i], n
			}
		}
		if at, d, ok := strings.Cut(os.Getenv(SleepEnv), "="); ok {
			if dur, err := time.ParseDuration(d); err == nil && dur > 0 {
				sleepAt, sleepFor = at, dur
			}
		}
	})
	if sleepAt != "" && name == sleepAt {
		time.Sleep(sleepFor)
	}
	if target == "" || name != target {
		return
	}
	mu.Lock()
	hits++
	h := hits
	mu.Unlock()
	if h == nth {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
