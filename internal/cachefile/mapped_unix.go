//go:build unix

package cachefile

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// ReleaseMapped takes the file's pages out of this process's mapping of
// the file: they stay in the page cache, and the next read of one maps it
// again (a minor fault, no disk read). The pages a process has read count
// in its RSS, and in a container's memory limit, until then, so a read of
// every object calls this as it goes. It runs inside a read transaction,
// which holds bbolt's mapping in place (a remap would otherwise move it
// under the call).
func (db *DB) ReleaseMapped() error {
	return db.ViewLookups(nil, ReleaseMappedTx)
}

// ReleaseMappedTx is ReleaseMapped inside a transaction the caller holds
// (a long read that releases as it goes without a second transaction).
// The pages tx has read stay readable: the next read maps them again.
func ReleaseMappedTx(tx *bolt.Tx) error {
	base, size := tx.DB().Info().Data, uintptr(tx.Size())
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, base, size, unix.MADV_DONTNEED); errno != 0 {
		return fmt.Errorf("%s: release mapped pages: %w", tx.DB().Path(), errno)
	}
	return nil
}
