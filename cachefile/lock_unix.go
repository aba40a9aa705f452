//go:build unix

package cachefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockShared takes a shared flock on path (the lock bbolt takes for a
// read-only open, which excludes a writer) within timeout.
func lockShared(path string, timeout time.Duration) (unlock func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, lockedError(path, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flockExclusive takes an exclusive flock on f within timeout.
func flockExclusive(f *os.File, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return lockedError(path, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
