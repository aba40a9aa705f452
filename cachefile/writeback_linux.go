package cachefile

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing the file's dirty pages
// back (sync_file_range with SYNC_FILE_RANGE_WRITE), and returns without
// waiting for them. It uses a descriptor of its own: a writeback error is
// then left for bbolt's descriptor to report, at its fsync.
func startWriteback(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("start writeback of %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE); err != nil {
		return fmt.Errorf("start writeback of %s: %w", path, err)
	}
	return nil
}
