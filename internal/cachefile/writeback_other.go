//go:build !linux

package cachefile

// startWriteBack does nothing where sync_file_range is missing: the fsync
// that ends an unsynced build (MakeDurable) writes every page back.
func (db *DB) startWriteBack() {}
