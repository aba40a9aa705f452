package deltafifo

import "k8s.io/client-go/tools/cache"

// dedupDeltas merges the two newest Deltas of deltas if they report the same
// event, which relisting and watching can both deliver. Only deletions are
// known to repeat.
func dedupDeltas(deltas cache.Deltas) cache.Deltas {
	n := len(deltas)
	if n < 2 {
		return deltas
	}
	if kept, dup := deletionDup(deltas[n-2], deltas[n-1]); dup {
		deltas[n-2] = kept
		return deltas[:n-1]
	}
	return deltas
}

// deletionDup reports whether older and newer are both deletions and, if so,
// which to keep: the older one, unless it is only a tombstone
// (cache.DeletedFinalStateUnknown) and so carries less than the newer.
func deletionDup(older, newer cache.Delta) (cache.Delta, bool) {
	if older.Type != cache.Deleted || newer.Type != cache.Deleted {
		return cache.Delta{}, false
	}
	if _, ok := older.Object.(cache.DeletedFinalStateUnknown); ok {
		return newer, true
	}
	return older, true
}
