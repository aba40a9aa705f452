package migrations

import (
	"fmt"
	"slices"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

// recordV1Version is the first field of every schema v1 record.
const recordV1Version = 1

// recordV1 is the record envelope of schema v1, frozen here as the store
// wrote it when v1 was current: steps to and from v1 must keep producing
// and reading exactly this, whatever later builds write. Codec numbers are
// those of cachefile.Codec.
type recordV1 struct {
	_msgpack struct{} `msgpack:",as_array"`

	Version    uint8
	RV         string
	UID        string
	Codec      uint8
	APIVersion string
	Kind       string
	Payload    []byte
	// Index lists, per index name in name order, the sorted distinct
	// values the record is indexed under (an empty list, not a missing
	// entry, when it has none).
	Index []indexEntryV1
}

type indexEntryV1 struct {
	_msgpack struct{} `msgpack:",as_array"`

	Name   string
	Values []string
}

func encodeRecordV1(r *recordV1) ([]byte, error) {
	b, err := msgpack.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode v1 record: %w", err)
	}
	return b, nil
}

func decodeRecordV1(data []byte) (*recordV1, error) {
	r := &recordV1{}
	if err := msgpack.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%w: v1 record: %v", ErrLayout, err)
	}
	if r.Version != recordV1Version {
		return nil, fmt.Errorf("%w: v1 record version %d", ErrLayout, r.Version)
	}
	return r, nil
}

// checkV1 checks a schema v1 file as the v1 build did: every record decodes,
// every value a record lists has its index entry and every index entry
// points to a record that lists its value.
func checkV1(tx *bolt.Tx) error {
	stores := tx.Bucket(cachefile.StoresBucket)
	if stores == nil {
		return fmt.Errorf("%w: no stores bucket", ErrLayout)
	}
	return stores.ForEachBucket(func(name []byte) error {
		root := stores.Bucket(name)
		objects, idx := root.Bucket(cachefile.ObjectsBucket), root.Bucket(cachefile.IndexBucket)
		if objects == nil || idx == nil || root.Bucket(cachefile.StateBucket) == nil {
			return fmt.Errorf("%w: store %s lacks its state, objects or idx bucket", ErrLayout, name)
		}
		err := objects.ForEach(func(k, v []byte) error {
			r, err := decodeRecordV1(v)
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			for _, ix := range r.Index {
				ib := idx.Bucket([]byte(ix.Name))
				for _, val := range ix.Values {
					if ib == nil || ib.Get(cachefile.IndexKey(val, string(k))) == nil {
						return fmt.Errorf("%w: key %q: index %q lacks value %q", ErrLayout, k, ix.Name, val)
					}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("store %s: %w", name, err)
		}
		return idx.ForEachBucket(func(iname []byte) error {
			return idx.Bucket(iname).ForEach(func(ik, _ []byte) error {
				val, key, ok := cachefile.SplitIndexKey(ik)
				if !ok {
					return fmt.Errorf("%w: store %s index %q entry %q has no separator", ErrLayout, name, iname, ik)
				}
				v := objects.Get([]byte(key))
				if v == nil {
					return fmt.Errorf("%w: store %s index %q value %q points to missing key %q", ErrLayout, name, iname, val, key)
				}
				r, err := decodeRecordV1(v)
				if err != nil {
					return err
				}
				for _, ix := range r.Index {
					if ix.Name == string(iname) && slices.Contains(ix.Values, val) {
						return nil
					}
				}
				return fmt.Errorf("%w: store %s index %q has stale value %q for key %q", ErrLayout, name, iname, val, key)
			})
		})
	})
}
