// Package v0 defines schema v0, the layout boltinformer cache files had
// before the meta bucket existed. No build writes it any more; it is kept,
// frozen, so that package migrations can read (and, for a revert, write)
// it and tests can generate v0 fixtures. It must never change: a v0 file
// on disk is whatever this package says it is.
//
// Layout (schema v0):
//
//	<store name>/                 one top-level bucket per store
//	    rv                        resourceVersion the store is current to (absent: never synced)
//	    objects/                  key → record: msgpack array [0, rv, uid, codec, apiVersion, kind, payload]
//	    index/<index name>/
//	        'v' + value/          one bucket per indexed value (the 'v' gives the empty value a name)
//	            key → empty       one entry per object indexed under that value
//
// A v0 file has no meta bucket, or a meta bucket whose schema-version is
// absent or 0; a top-level bucket named "meta" is therefore never a store.
package v0

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

// Bucket names and keys of schema v0.
var (
	// MetaBucket is the only top-level bucket that is not a store.
	MetaBucket = []byte("meta")
	// ObjectsBucket maps object keys to v0 records.
	ObjectsBucket = []byte("objects")
	// IndexBucket holds one bucket per index, and in it one bucket per value.
	IndexBucket = []byte("index")
	// RVKey is the store's resourceVersion, a key in the store's bucket.
	RVKey = []byte("rv")
)

// ValuePrefix starts the name of every value bucket: bbolt refuses empty
// bucket names, and the empty string is a common index value (the
// namespace index of cluster-scoped objects).
const ValuePrefix byte = 'v'

// RecordVersion is the first field of every v0 record.
const RecordVersion = 0

// ErrLayout means a file does not follow the v0 layout.
var ErrLayout = errors.New("file does not follow the layout of its schema version")

// Record is the v0 envelope of one object: the v1 envelope without the
// per-record index values. Codec numbers are those of cachefile.Codec.
type Record struct {
	_msgpack struct{} `msgpack:",as_array"`

	Version    uint8
	RV         string
	UID        string
	Codec      uint8
	APIVersion string
	Kind       string
	Payload    []byte
}

// Encode returns the msgpack encoding of r.
func Encode(r *Record) ([]byte, error) {
	b, err := msgpack.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode v0 record: %w", err)
	}
	return b, nil
}

// Decode parses a v0 record. data may alias bbolt memory; the result does not.
func Decode(data []byte) (*Record, error) {
	r := &Record{}
	if err := msgpack.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%w: record: %v", ErrLayout, err)
	}
	if r.Version != RecordVersion {
		return nil, fmt.Errorf("%w: record version %d, want %d", ErrLayout, r.Version, RecordVersion)
	}
	return r, nil
}

// ValueBucket returns the name of the bucket of an index value.
func ValueBucket(value string) []byte {
	b := make([]byte, 0, len(value)+1)
	b = append(b, ValuePrefix)
	return append(b, value...)
}

// ParseValueBucket returns the index value a value bucket is named after.
func ParseValueBucket(name []byte) (string, bool) {
	if len(name) == 0 || name[0] != ValuePrefix {
		return "", false
	}
	return string(name[1:]), true
}

// IsStore reports whether a top-level bucket of a v0 file is a store.
func IsStore(name []byte) bool { return !bytes.Equal(name, MetaBucket) }

// Check verifies that tx follows the v0 layout: every store has an objects
// and an index bucket and nothing else but rv, every record decodes, and
// every index entry names a stored object. It returns the first problem.
func Check(tx *bolt.Tx) error {
	return tx.ForEach(func(name []byte, root *bolt.Bucket) error {
		if !IsStore(name) {
			return nil
		}
		return checkStore(string(name), root)
	})
}

func checkStore(name string, root *bolt.Bucket) error {
	objects, index := root.Bucket(ObjectsBucket), root.Bucket(IndexBucket)
	if objects == nil || index == nil {
		return fmt.Errorf("%w: store %s lacks objects or index bucket", ErrLayout, name)
	}
	err := root.ForEach(func(k, _ []byte) error {
		switch {
		case bytes.Equal(k, ObjectsBucket), bytes.Equal(k, IndexBucket):
			return nil
		case bytes.Equal(k, RVKey) && root.Bucket(k) == nil:
			return nil
		}
		return fmt.Errorf("%w: store %s has unexpected entry %q", ErrLayout, name, k)
	})
	if err != nil {
		return err
	}
	err = objects.ForEach(func(k, v []byte) error {
		if objects.Bucket(k) != nil {
			return fmt.Errorf("%w: store %s: objects holds a bucket %q", ErrLayout, name, k)
		}
		if _, err := Decode(v); err != nil {
			return fmt.Errorf("store %s key %q: %w", name, k, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return index.ForEachBucket(func(iname []byte) error {
		ib := index.Bucket(iname)
		return ib.ForEach(func(vname, _ []byte) error {
			value, ok := ParseValueBucket(vname)
			if !ok || ib.Bucket(vname) == nil {
				return fmt.Errorf("%w: store %s index %q: entry %q is not a value bucket", ErrLayout, name, iname, vname)
			}
			return ib.Bucket(vname).ForEach(func(key, _ []byte) error {
				if objects.Get(key) == nil {
					return fmt.Errorf("%w: store %s index %q value %q points to missing key %q", ErrLayout, name, iname, value, key)
				}
				return nil
			})
		})
	})
}
