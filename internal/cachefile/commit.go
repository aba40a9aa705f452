package cachefile

import (
	"errors"
	"fmt"
	"sync"

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

	// durable marks MakeDurable's request, which has no Fn and runs alone.
	durable bool
	// result receives the request's outcome, or errLead when its caller is
	// to run the commit loop next.
	result chan error
}

// errLead, sent to a queued request, hands its caller the commit loop.
var errLead = errors.New("lead the commit loop")

// writer is the DB's commit loop. It has no goroutine of its own: the
// caller of Update (or MakeDurable) that finds no commit in flight runs
// it, taking every request queued by then, its own first, into one
// transaction, and answers them all. A lone writer's commit therefore
// never leaves its goroutine. Requests queued meanwhile wait; when the
// commit is done, the caller of the oldest of them runs the loop next, so
// no caller commits more than the transaction its request is in.
type writer struct {
	// mu guards the fields below; it is never held over a commit.
	mu sync.Mutex
	// queue holds the requests no commit has taken yet, oldest first. It is
	// empty whenever leading is false.
	queue []*Write
	// leading: a caller runs the commit loop, or has been handed it.
	leading bool
	// closed: Close has started, and takes no more requests.
	closed bool
	// idle is signalled when leading turns false: Close waits on it.
	idle sync.Cond

	// batch is the requests of the commit in flight; only the caller
	// running the loop touches it.
	batch []*Write
	// errs are their outcomes, in order; as batch.
	errs []error
}

// Update submits w to the commit loop and waits until its transaction has
// committed (nil) or failed. If a merged transaction fails, each of its
// writes is retried alone, so one bad write never fails the others.
func (db *DB) Update(w *Write) error {
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	w.durable = false
	return db.submit(w)
}

// submit queues r, and either runs the commit loop for it or waits until
// the loop has answered it.
func (db *DB) submit(r *Write) error {
	r.result = make(chan error, 1)
	wr := &db.writer
	wr.mu.Lock()
	if wr.closed {
		wr.mu.Unlock()
		return ErrClosed
	}
	wr.queue = append(wr.queue, r)
	if wr.leading {
		wr.mu.Unlock()
		if err := <-r.result; !errors.Is(err, errLead) {
			return err
		}
	} else {
		wr.leading = true
		wr.mu.Unlock()
	}
	db.lead(r)
	return <-r.result
}

// lead runs one turn of the commit loop: own, at the head of the queue,
// and what follows it (takeLocked) are committed and answered, then the
// loop passes to the caller of the oldest request left, or stops. A commit
// hook runs on this goroutine, whichever write it belongs to; should one
// panic, the panic unwinds this caller, the others of the batch get an
// error, and the loop is still passed on: no caller waits forever.
func (db *DB) lead(own *Write) {
	wr := &db.writer
	wr.mu.Lock()
	wr.batch = takeLocked(wr.batch[:0], &wr.queue, db.opts.MaxBatch)
	wr.mu.Unlock()
	batch := wr.batch
	answered := false
	defer func() {
		if !answered {
			for _, r := range batch {
				if r != own {
					r.result <- fmt.Errorf("%s: a commit hook panicked in the transaction of this write", db.path)
				}
			}
		}
		clear(wr.batch)
		db.passOn()
	}()

	errs := db.run(batch)
	for i, r := range batch {
		r.result <- errs[i]
	}
	answered = true
}

// takeLocked moves the requests of the next transaction from the head of
// queue to batch: a MakeDurable request alone, or up to maxBatch writes.
func takeLocked(batch []*Write, queue *[]*Write, maxBatch int) []*Write {
	q := *queue
	n := 1
	if !q[0].durable {
		for n < len(q) && n < maxBatch && !q[n].durable {
			n++
		}
	}
	batch = append(batch, q[:n]...)
	rest := copy(q, q[n:])
	clear(q[rest:])
	*queue = q[:rest]
	return batch
}

// run commits batch and returns each request's outcome. A merged
// transaction that fails is retried one write at a time.
func (db *DB) run(batch []*Write) []error {
	wr := &db.writer
	errs := wr.errs[:0]
	if batch[0].durable {
		wr.errs = append(errs, db.makeDurable())
		return wr.errs
	}
	err := db.commit(batch)
	db.writeBackUnsynced()
	if err != nil && len(batch) > 1 {
		for _, w := range batch {
			errs = append(errs, db.commit([]*Write{w}))
		}
	} else {
		for range batch {
			errs = append(errs, err)
		}
	}
	wr.errs = errs
	return errs
}

// passOn hands the commit loop to the caller of the oldest queued request,
// or stops it when none is queued.
func (db *DB) passOn() {
	wr := &db.writer
	wr.mu.Lock()
	if len(wr.queue) == 0 {
		wr.leading = false
		wr.idle.Broadcast()
		wr.mu.Unlock()
		return
	}
	next := wr.queue[0]
	wr.mu.Unlock()
	next.result <- errLead
}

// closeAndWaitLocked closes the writer to new requests and waits until the
// requests queued before have been answered. wr.mu is held.
func (wr *writer) closeAndWaitLocked() {
	wr.closed = true
	for wr.leading {
		wr.idle.Wait()
	}
}

// commit runs batch in one transaction between its writes' hooks. A hook
// that panics ends the commit; the AfterCommit hooks then hear that
// nothing committed.
func (db *DB) commit(batch []*Write) error {
	for _, w := range batch {
		if w.BeforeCommit != nil {
			w.BeforeCommit()
		}
	}
	committed := false
	defer func() {
		for _, w := range batch {
			if w.AfterCommit != nil {
				w.AfterCommit(committed)
			}
		}
	}()
	err := guard(db.path, func() error {
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
	committed = err == nil
	return err
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
