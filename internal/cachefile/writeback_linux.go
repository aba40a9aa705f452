package cachefile

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteBack asks the kernel to start writing the file's dirty pages
// back, and returns without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE, on a descriptor of its own: the page cache is
// the file's, whichever descriptor names it). An unsynced build calls it
// after its commits, so that the pages it wrote go to the disk while it
// goes on instead of all at once in the fsync that ends it (MakeDurable).
// It makes nothing durable, which is still that fsync's job, and its
// failure changes only how long that fsync takes, so it is ignored.
func (db *DB) startWriteBack() {
	f, err := os.Open(db.file)
	if err != nil {
		return
	}
	defer f.Close()
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
