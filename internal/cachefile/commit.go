package cachefile

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/failpoint"
)

// Write is one caller's part of a merged write transaction.
type Write struct {
	// Fn applies the change inside the transaction; it must not keep tx
	// or memory it returns. Its error rolls back the whole transaction.
	Fn func(tx *bolt.Tx) error
	// BeforeCommit and AfterCommit run in the commit loop around the
	// commit (the hot-object cache keeps itself coherent with them);
	// either may be nil.
	BeforeCommit func()
	AfterCommit  func(committed bool)

	result chan error
}

// Update submits w to the commit loop and waits until its transaction has
// committed (nil) or failed. If a merged transaction fails, each of its
// writes is retried alone, so one bad write never fails the others.
func (db *DB) Update(w *Write) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	w.result = make(chan error, 1)
	select {
	case db.requests <- w:
	case <-db.closed:
		return ErrClosed
	}
	return <-w.result
}

// commitLoop merges queued writes into one transaction.
func (db *DB) commitLoop() {
	defer close(db.done)
	batch := make([]*Write, 0, db.opts.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case w := <-db.requests:
			batch = append(batch, w)
		case res := <-db.durable:
			res <- db.makeDurable()
			continue
		case <-db.stop:
			return
		}
	gather:
		for len(batch) < db.opts.MaxBatch {
			select {
			case w := <-db.requests:
				batch = append(batch, w)
			default:
				break gather
			}
		}
		err := db.commit(batch)
		db.writeBackUnsynced()
		if err != nil && len(batch) > 1 {
			for _, w := range batch {
				w.result <- db.commit([]*Write{w})
			}
			continue
		}
		for _, w := range batch {
			w.result <- err
		}
	}
}

func (db *DB) commit(batch []*Write) (err error) {
	for _, w := range batch {
		if w.BeforeCommit != nil {
			w.BeforeCommit()
		}
	}
	defer func() {
		for _, w := range batch {
			if w.AfterCommit != nil {
				w.AfterCommit(err == nil)
			}
		}
	}()
	return guard(db.path, func() error {
		return db.bolt.Update(func(tx *bolt.Tx) error {
			failpoint.Inject("cachefile.beforeWrite")
			for _, w := range batch {
				if err := runWrite(w.Fn, tx); err != nil {
					return err
				}
			}
			failpoint.Inject("cachefile.beforeCommit")
			return nil
		})
	})
}

// runWrite turns a panic in fn into an error so the commit loop survives it.
func runWrite(fn func(tx *bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("write panicked: %v", r)
		}
	}()
	return fn(tx)
}
