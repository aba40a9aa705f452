package admin

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// recordChunk is how many raw records one read transaction copies, so a
// long stream never holds a transaction that would block a writer's remap.
const recordChunk = 512

// Records streams a store's raw records, recordChunk per read transaction.
func (l *Local) Records(ctx context.Context, store string, showSecrets bool, fn func(Record) error) error {
	run, err := l.prepareRecords(ctx, store, showSecrets)
	if err != nil {
		return err
	}
	return run(fn)
}

func (l *Local) prepareRecords(ctx context.Context, store string, showSecrets bool) (func(fn func(Record) error) error, error) {
	si, err := l.storeMeta(ctx, store)
	if err != nil {
		return nil, err
	}
	if isSecretStore(si.identity) && !showSecrets {
		return nil, fmt.Errorf("%w: store %s", ErrSecretsHidden, store)
	}
	return func(fn func(Record) error) error { return l.walkRecords(ctx, store, fn) }, nil
}

func (l *Local) walkRecords(ctx context.Context, store string, fn func(Record) error) error {
	var after []byte
	for {
		var chunk []Record
		err := l.db.View(func(tx *bolt.Tx) error {
			b := objectsBucket(tx, store)
			if b == nil {
				return fmt.Errorf("%w: %q in %s", ErrStoreNotFound, store, l.db.Path())
			}
			c := b.Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			for ; k != nil && len(chunk) < recordChunk; k, v = c.Next() {
				chunk = append(chunk, Record{Key: string(k), Value: bytes.Clone(v)})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, r := range chunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(chunk) < recordChunk {
			return nil
		}
		if err := l.db.ReleaseMapped(); err != nil {
			return err
		}
		after = []byte(chunk[len(chunk)-1].Key)
	}
}
