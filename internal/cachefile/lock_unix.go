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
	if err := flockWait(f, path, syscall.LOCK_SH, timeout); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// flockExclusive takes an exclusive flock on f within timeout.
func flockExclusive(f *os.File, path string, timeout time.Duration) error {
	return flockWait(f, path, syscall.LOCK_EX, timeout)
}

// flockBolt takes on f the flock bbolt takes for an open: shared when
// readOnly, exclusive otherwise. bbolt's own flock on the same open file
// then succeeds at once.
func flockBolt(f *os.File, path string, readOnly bool, timeout time.Duration) error {
	how := syscall.LOCK_EX
	if readOnly {
		how = syscall.LOCK_SH
	}
	return flockWait(f, path, how, timeout)
}

// flockWait takes the flock how on f, retrying until timeout (ErrLocked).
func flockWait(f *os.File, path string, how int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
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
