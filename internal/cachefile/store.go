package cachefile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Buckets are the buckets of one store inside one transaction. Methods
// ending in Tx and everything reached through Buckets are valid only inside
// the transaction that produced them.
type Buckets struct {
	Name                      string
	Root, State, Objects, Idx *bolt.Bucket

	// countDelta is the change to StateCount not yet written (FlushCount).
	countDelta int
}

// ValidStoreName reports a store name bbolt and the index layout can hold.
func ValidStoreName(name string) error {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("invalid store name %q: empty or has a NUL byte", name)
	}
	return nil
}

// StoreTx returns the buckets of store name, or ErrNoStore. A store that
// lacks one of its buckets is ErrCorruptFile.
func StoreTx(tx *bolt.Tx, name string) (*Buckets, error) {
	stores := tx.Bucket(StoresBucket)
	if stores == nil {
		return nil, fmt.Errorf("%w: no stores bucket", ErrCorruptFile)
	}
	root := stores.Bucket([]byte(name))
	if root == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoStore, name)
	}
	return storeBuckets(root, name)
}

func storeBuckets(root *bolt.Bucket, name string) (*Buckets, error) {
	b := &Buckets{
		Name:    name,
		Root:    root,
		State:   root.Bucket(StateBucket),
		Objects: root.Bucket(ObjectsBucket),
		Idx:     root.Bucket(IndexBucket),
	}
	if b.State == nil || b.Objects == nil || b.Idx == nil {
		return nil, fmt.Errorf("%w: store %s lacks its state, objects or idx bucket", ErrCorruptFile, name)
	}
	b.Objects.FillPercent = ObjectsFillPercent
	return b, nil
}

// CreateStoreTx returns the buckets of store name, creating what is missing.
func CreateStoreTx(tx *bolt.Tx, name string) (*Buckets, error) {
	if err := ValidStoreName(name); err != nil {
		return nil, err
	}
	stores, err := tx.CreateBucketIfNotExists(StoresBucket)
	if err != nil {
		return nil, err
	}
	root, err := stores.CreateBucketIfNotExists([]byte(name))
	if err != nil {
		return nil, err
	}
	fresh := root.Bucket(ObjectsBucket) == nil
	for _, n := range [][]byte{StateBucket, ObjectsBucket, IndexBucket} {
		if _, err := root.CreateBucketIfNotExists(n); err != nil {
			return nil, err
		}
	}
	b, err := storeBuckets(root, name)
	if err == nil && fresh {
		err = b.State.Put(StateCount, []byte("0"))
	}
	return b, err
}

// ForEachStoreTx calls fn with the buckets of every store, in name order.
// A store that lacks a bucket is passed with a nil Buckets and the error
// that says so, so that a check can report it and go on.
func ForEachStoreTx(tx *bolt.Tx, fn func(name string, b *Buckets, err error) error) error {
	stores := tx.Bucket(StoresBucket)
	if stores == nil {
		return fmt.Errorf("%w: no stores bucket", ErrCorruptFile)
	}
	return stores.ForEachBucket(func(name []byte) error {
		b, err := storeBuckets(stores.Bucket(name), string(name))
		return fn(string(name), b, err)
	})
}

// Index returns the bucket of one index (nil if it does not exist), with
// the fill of IndexFillPercent for the transaction's writes.
func (b *Buckets) Index(name string) *bolt.Bucket {
	ib := b.Idx.Bucket([]byte(name))
	if ib != nil {
		ib.FillPercent = IndexFillPercent
	}
	return ib
}

// CreateIndex creates the bucket of one index, which must not exist, with
// the fill of IndexFillPercent for the transaction's writes.
func (b *Buckets) CreateIndex(name string) (*bolt.Bucket, error) {
	ib, err := b.Idx.CreateBucket([]byte(name))
	if err != nil {
		return nil, err
	}
	ib.FillPercent = IndexFillPercent
	return ib, nil
}

// Seen returns the relist's seen bucket (nil outside a relist).
func (b *Buckets) Seen() *bolt.Bucket { return b.Root.Bucket(SeenBucket) }

// Count returns the number of records, from the store's state.
func (b *Buckets) Count() (int, error) {
	v := b.State.Get(StateCount)
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: store %s count %q", ErrCorruptFile, b.Name, v)
	}
	return n + b.countDelta, nil
}

// PutRecord stores an encoded record; existed says whether the key held one.
func (b *Buckets) PutRecord(key, enc []byte, existed bool) error {
	if err := b.Objects.Put(key, enc); err != nil {
		return err
	}
	if !existed {
		b.countDelta++
	}
	return nil
}

// DeleteRecord removes the record of a key that holds one.
func (b *Buckets) DeleteRecord(key []byte) error {
	if err := b.Objects.Delete(key); err != nil {
		return err
	}
	b.countDelta--
	return nil
}

// FlushCount writes the record count changed by PutRecord and DeleteRecord.
// Every write transaction that used them calls it before it commits.
func (b *Buckets) FlushCount() error {
	if b.countDelta == 0 {
		return nil
	}
	n, err := b.Count()
	if err != nil {
		return err
	}
	b.countDelta = 0
	return b.State.Put(StateCount, []byte(strconv.Itoa(n)))
}

// Reset empties the store: objects, indexes, relist state, RV, cluster and
// the stored indexer list. The identity is left for the caller to rewrite.
func (b *Buckets) Reset() error {
	for _, n := range [][]byte{ObjectsBucket, IndexBucket, SeenBucket} {
		if b.Root.Bucket(n) != nil {
			if err := b.Root.DeleteBucket(n); err != nil {
				return err
			}
		}
	}
	var err error
	if b.Objects, err = b.Root.CreateBucket(ObjectsBucket); err != nil {
		return err
	}
	if b.Idx, err = b.Root.CreateBucket(IndexBucket); err != nil {
		return err
	}
	for _, k := range [][]byte{StateRV, StateRVUpdatedAt, StateRelist, StateIndexers, StateCluster} {
		if err := b.State.Delete(k); err != nil {
			return err
		}
	}
	b.countDelta = 0
	return b.State.Put(StateCount, []byte("0"))
}

// IndexKey is the composite key of an index entry: value 0x00 key.
func IndexKey(value, key string) []byte {
	k := make([]byte, 0, len(value)+1+len(key))
	k = append(k, value...)
	k = append(k, IndexSeparator)
	return append(k, key...)
}

// SplitIndexKey parses an index entry key.
func SplitIndexKey(k []byte) (value, key string, ok bool) {
	i := bytes.IndexByte(k, IndexSeparator)
	if i < 0 {
		return "", "", false
	}
	return string(k[:i]), string(k[i+1:]), true
}

// CountValuesTx counts the distinct values of an index bucket without
// visiting every entry: it seeks past each value's keys.
func CountValuesTx(ib *bolt.Bucket, fn func(value string) error) error {
	c := ib.Cursor()
	for k, _ := c.First(); k != nil; {
		v, _, ok := SplitIndexKey(k)
		if !ok {
			return fmt.Errorf("%w: index entry %q has no separator", ErrCorruptFile, k)
		}
		if err := fn(v); err != nil {
			return err
		}
		k, _ = c.Seek(append([]byte(v), IndexSeparator+1))
	}
	return nil
}

// ObjectsTx returns the objects bucket of store name, or ErrNoStore: what a
// read by key needs, without opening the store's other buckets.
func ObjectsTx(tx *bolt.Tx, name []byte) (*bolt.Bucket, error) {
	stores := tx.Bucket(StoresBucket)
	if stores == nil {
		return nil, fmt.Errorf("%w: no stores bucket", ErrCorruptFile)
	}
	root := stores.Bucket(name)
	if root == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoStore, name)
	}
	objects := root.Bucket(ObjectsBucket)
	if objects == nil {
		return nil, fmt.Errorf("%w: store %s lacks its objects bucket", ErrCorruptFile, name)
	}
	return objects, nil
}
