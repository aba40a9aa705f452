package cachefile

// writeBackEvery is how many commits of an unsynced build go by between
// two calls of startWriteBack: a page rewritten by several of them is
// sent to the disk once, and the fsync that ends the build (MakeDurable)
// is left with at most that many commits' pages to write.
const writeBackEvery = 16

// writeBackUnsynced sends an unsynced build's dirty pages to the disk
// every writeBackEvery commits, without waiting for them. The commit loop
// calls it after each commit.
func (db *DB) writeBackUnsynced() {
	if !db.unsynced.Load() {
		return
	}
	if db.unsyncedCommits++; db.unsyncedCommits < writeBackEvery {
		return
	}
	db.unsyncedCommits = 0
	db.startWriteBack()
}
