package cachefile

// A warm start checks every record before it resumes from the stored RV
// (boltstore's CheckRecords), and a writable Open has just read every page
// to validate it. The open's page walk therefore checks the records too,
// as ParseRecord does, and remembers the stores whose records were all
// whole: their CheckRecords need not read the file again. Until Close,
// only this process writes the file (it holds the lock), and it writes
// whole records only.

// recordCheck collects, during the open's page walk, the stores whose
// records all parse.
type recordCheck struct {
	// whole and damaged are the stores whose records all parsed, and
	// those with one that did not.
	whole, damaged map[string]bool
	// last is the store of the previous record and lastDamaged what was
	// found in it: records come store by store.
	last        string
	lastDamaged bool
	view        RecordView
}

func newRecordCheck() *recordCheck {
	return &recordCheck{whole: map[string]bool{}, damaged: map[string]bool{}}
}

// record checks one record of store's objects bucket.
func (c *recordCheck) record(store, key, value []byte) {
	if string(store) != c.last {
		c.last = string(store)
		c.lastDamaged = c.damaged[c.last]
		if !c.lastDamaged {
			c.whole[c.last] = true
		}
	}
	if c.lastDamaged {
		return
	}
	if ParseRecord(key, value, &c.view) != nil {
		c.lastDamaged = true
		c.damaged[c.last] = true
		delete(c.whole, c.last)
	}
}

// RecordsCheckedAtOpen reports whether Open found every record of store
// name whole (checksum and envelope, as ParseRecord checks them), on a
// writable DB. What was written since came from this process, whole.
func (db *DB) RecordsCheckedAtOpen(name string) bool {
	return db.recordsWhole[name]
}
