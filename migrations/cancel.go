package migrations

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// closeOnCancel closes work when ctx ends, so that the copy filling it
// fails at its next transaction: Close waits for a write transaction in
// progress, so a cancel takes effect between chunks (TxMaxSize each) and
// never tears one. stop ends the watch and returns ctx's error if ctx
// ended before it: the caller then discards work, closed or not.
func closeOnCancel(ctx context.Context, work *bolt.DB) (stop func() error) {
	if ctx.Done() == nil {
		return func() error { return nil }
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
			_ = work.Close()
		case <-done:
		}
	}()
	return func() error {
		close(done)
		<-finished
		return ctx.Err()
	}
}

// compactCopy copies every bucket, key and sequence of src into dst (empty)
// with leaves filled to the brim, as bbolt's Compact does, committing a
// transaction of dst whenever about txMaxSize bytes of keys and values
// went into it. Unlike bbolt's Compact it checks ctx before each
// transaction, and so stops between two of them.
func compactCopy(ctx context.Context, dst, src *bolt.DB, txMaxSize int64) error {
	c := &chunkedCopy{ctx: ctx, db: dst, max: txMaxSize}
	defer c.rollback()
	err := src.View(func(stx *bolt.Tx) error {
		return stx.ForEach(func(name []byte, b *bolt.Bucket) error { return c.copyBucket(nil, name, b) })
	})
	if err != nil {
		return err
	}
	return c.commit()
}

// chunkedCopy is the state of compactCopy: the open transaction of dst and
// the bucket it last wrote to.
type chunkedCopy struct {
	ctx  context.Context
	db   *bolt.DB
	max  int64
	size int64
	tx   *bolt.Tx
	// cur is the destination bucket at curPath in tx (nil after a commit).
	cur     *bolt.Bucket
	curPath [][]byte
}

// begin opens a transaction of dst, after checking ctx, unless one is open.
func (c *chunkedCopy) begin() error {
	if c.tx != nil {
		return nil
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	tx, err := c.db.Begin(true)
	if err != nil {
		return err
	}
	c.tx, c.cur = tx, nil
	return nil
}

// bucketAt returns the destination bucket at path (which exists) in the
// open transaction, beginning one when none is.
func (c *chunkedCopy) bucketAt(path [][]byte) (*bolt.Bucket, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	if c.cur != nil && samePath(path, c.curPath) {
		return c.cur, nil
	}
	b := c.tx.Bucket(path[0])
	for _, name := range path[1:] {
		if b == nil {
			break
		}
		b = b.Bucket(name)
	}
	if b == nil {
		return nil, fmt.Errorf("compact: bucket %q missing in the copy", path)
	}
	b.FillPercent = 1.0
	c.cur, c.curPath = b, path
	return b, nil
}

// wrote counts n bytes into the transaction and commits it when full.
func (c *chunkedCopy) wrote(n int) error {
	c.size += int64(n)
	if c.max > 0 && c.size >= c.max {
		return c.commit()
	}
	return nil
}

func (c *chunkedCopy) commit() error {
	if c.tx == nil {
		return nil
	}
	tx := c.tx
	c.tx, c.cur, c.size = nil, nil, 0
	return tx.Commit()
}

func (c *chunkedCopy) rollback() {
	if c.tx != nil {
		_ = c.tx.Rollback()
		c.tx, c.cur = nil, nil
	}
}

// copyBucket creates the bucket name under parent and copies src into it.
func (c *chunkedCopy) copyBucket(parent [][]byte, name []byte, src *bolt.Bucket) error {
	var b *bolt.Bucket
	var err error
	if len(parent) == 0 {
		if err = c.begin(); err == nil {
			b, err = c.tx.CreateBucket(name)
		}
	} else {
		var pb *bolt.Bucket
		if pb, err = c.bucketAt(parent); err == nil {
			b, err = pb.CreateBucket(name)
		}
	}
	if err != nil {
		return err
	}
	if err := b.SetSequence(src.Sequence()); err != nil {
		return err
	}
	if err := c.wrote(len(name)); err != nil {
		return err
	}
	path := append(append([][]byte{}, parent...), name)
	cur := src.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if v == nil {
			if err := c.copyBucket(path, k, src.Bucket(k)); err != nil {
				return err
			}
			continue
		}
		b, err := c.bucketAt(path)
		if err != nil {
			return err
		}
		if err := b.Put(k, v); err != nil {
			return err
		}
		if err := c.wrote(len(k) + len(v)); err != nil {
			return err
		}
	}
	return nil
}
