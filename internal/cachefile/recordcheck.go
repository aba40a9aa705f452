package cachefile

import (
	"runtime"
	"sync"
)

// A warm start checks every record before it resumes from the stored RV
// (boltstore's CheckRecords), and a writable Open has just read every page
// to validate it. The open's page walk therefore checks the records too,
// as ParseRecord does, and remembers the stores whose records were all
// whole: their CheckRecords need not read the file again. Until Close,
// only this process writes the file (it holds the lock), and it writes
// whole records only.
//
// The walk reads the leaves of a branch page together (span); it hands a
// span's records to workers, one per CPU, and reads on with a span buffer
// of their pool, so that checksums are computed on every CPU while the
// walk checks the pages. The pool bounds what is read ahead. Which stores
// are whole does not depend on the order the records are checked in.

// recordCheck collects, during the open's page walk, the stores whose
// records all parse.
type recordCheck struct {
	// whole are the stores the walk found records of; set by the walk only.
	whole map[string]bool
	// mu guards damaged, the stores with a record that did not parse,
	// which the walk and the workers add to.
	mu      sync.Mutex
	damaged map[string]bool
	// last is the store of the previous record the walk found: records
	// come store by store.
	last string
	// view is the walk's own, for the records it checks itself.
	view RecordView

	// jobs takes spans' records to the workers; free holds the spans the
	// walk may fill, back from the workers once checked. Both are nil
	// until start.
	jobs    chan *recordJob
	free    chan *recordJob
	workers sync.WaitGroup
}

// recordJob is the records of one store found in one span buffer: keys and
// values are slices of buf, which the walk does not read into until the
// job comes back through free.
type recordJob struct {
	buf   []byte
	store string
	recs  [][2][]byte
}

func newRecordCheck() *recordCheck {
	return &recordCheck{whole: map[string]bool{}, damaged: map[string]bool{}}
}

// start starts the workers; stop must follow. spanBytes is the size of a
// span buffer.
func (c *recordCheck) start(spanBytes int) {
	n := max(runtime.GOMAXPROCS(0), 1)
	c.jobs = make(chan *recordJob, n)
	c.free = make(chan *recordJob, 2*n+1)
	for range 2*n + 1 {
		c.free <- &recordJob{buf: make([]byte, spanBytes)}
	}
	for range n {
		c.workers.Add(1)
		go func() {
			defer c.workers.Done()
			var view RecordView
			for j := range c.jobs {
				damaged := false
				for _, r := range j.recs {
					if ParseRecord(r[0], r[1], &view) != nil {
						damaged = true
						break
					}
				}
				if damaged {
					c.markDamaged(j.store)
				}
				j.recs = j.recs[:0]
				c.free <- j
			}
		}()
	}
}

// stop waits for the workers to check what they were handed and ends them.
func (c *recordCheck) stop() {
	if c.jobs == nil {
		return
	}
	close(c.jobs)
	c.workers.Wait()
	c.jobs = nil
	for name := range c.damaged {
		delete(c.whole, name)
	}
}

// running reports whether the workers are started.
func (c *recordCheck) running() bool { return c.jobs != nil }

func (c *recordCheck) markDamaged(store string) {
	c.mu.Lock()
	c.damaged[store] = true
	c.mu.Unlock()
}

// see notes that the walk found a record of store.
func (c *recordCheck) see(store []byte) {
	if string(store) != c.last {
		c.last = string(store)
		c.whole[c.last] = true
	}
}

// add checks one record of store's objects bucket: once sp (the span the
// record's page is a slice of) is handed off, or at once when there is no
// span or it holds another store's.
func (c *recordCheck) add(store, key, value []byte, sp *span) {
	c.see(store)
	if sp != nil && c.running() && (len(sp.recs) == 0 || sp.store == c.last) {
		sp.store = c.last
		sp.recs = append(sp.recs, [2][]byte{key, value})
		return
	}
	if ParseRecord(key, value, &c.view) != nil {
		c.markDamaged(c.last)
	}
}

// handOff gives sp's records, with its buffer, to the workers, and gives
// sp a buffer of the pool in exchange, waiting for one if none is free.
func (c *recordCheck) handOff(sp *span) {
	j := <-c.free
	j.buf, sp.buf = sp.buf, j.buf
	j.recs, sp.recs = sp.recs, j.recs[:0]
	j.store = sp.store
	c.jobs <- j
}

// finish hands off the records the spans still hold and waits until every
// record is checked.
func (c *recordCheck) finish(spans []span) {
	for i := range spans {
		if len(spans[i].recs) > 0 {
			c.handOff(&spans[i])
		}
	}
	c.stop()
}

// RecordsCheckedAtOpen reports whether Open found every record of store
// name whole (checksum and envelope, as ParseRecord checks them), on a
// writable DB. What was written since came from this process, whole.
func (db *DB) RecordsCheckedAtOpen(name string) bool {
	return db.recordsWhole[name]
}
