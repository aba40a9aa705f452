package migrations

import (
	"bytes"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Schema v2 adds, per record, a CRC-32C of key and envelope and the id of
// the key that seals its payload; and per store, the object count, the time
// the RV last moved and the cluster the RV belongs to (see cachefile).
var stepV1V2 = step{
	from: 1, to: 2,
	up: change{
		description: "rewrite every record in the v2 envelope (key id, CRC-32C of key and envelope); " +
			"add each store's object count and rv-updated-at (from updated-at)",
		rewrite: upV1V2,
	},
	down: &change{
		description: "rewrite every record in the v1 envelope (no checksum, no key id); drop count, " +
			"rv-updated-at and cluster (refused if a record is encrypted: v1 has no place for its key id)",
		rewrite: downV1V2,
	},
}

// v1StateKeys are the state keys schema v1 has.
var v1StateKeys = [][]byte{cachefile.StateRV, cachefile.StateIdentity, cachefile.StateIndexers, cachefile.StateRelist, cachefile.StateUpdatedAt}

func upV1V2(src *bolt.Tx, dst *bolt.DB, e *env) error {
	return rewriteStores(src, dst, e, 2, stateless(func(store, key, v []byte) ([]byte, error) {
		r, err := decodeRecordV1(v)
		if err != nil {
			return nil, err
		}
		rec := &cachefile.Record{
			RV: r.RV, UID: r.UID, Codec: cachefile.Codec(r.Codec), APIVersion: r.APIVersion, Kind: r.Kind, Payload: r.Payload,
		}
		for _, ix := range r.Index {
			rec.Index = append(rec.Index, cachefile.IndexValues{Name: ix.Name, Values: ix.Values})
		}
		return cachefile.EncodeRecordVersion(key, rec, 2)
	}), func(state *bolt.Bucket, count int, put func(k, v []byte) error) error {
		for _, k := range v1StateKeys {
			if v := state.Get(k); v != nil {
				if err := put(k, v); err != nil {
					return err
				}
			}
		}
		if v := state.Get(cachefile.StateRV); v != nil {
			if at := state.Get(cachefile.StateUpdatedAt); at != nil {
				if err := put(cachefile.StateRVUpdatedAt, at); err != nil {
					return err
				}
			}
		}
		return put(cachefile.StateCount, []byte(strconv.Itoa(count)))
	})
}

func downV1V2(src *bolt.Tx, dst *bolt.DB, e *env) error {
	return rewriteStores(src, dst, e, 1, stateless(func(store, key, v []byte) ([]byte, error) {
		rec, err := cachefile.DecodeRecordVersion(key, v, 2)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrLayout, err)
		}
		if rec.KeyID != "" {
			return nil, fmt.Errorf("%w: store %s key %q is encrypted with key %q and schema v1 cannot hold encrypted records (rewrite it in plaintext first)",
				ErrIrreversible, store, key, rec.KeyID)
		}
		r := &recordV1{Version: recordV1Version, RV: rec.RV, UID: rec.UID, Codec: uint8(rec.Codec), APIVersion: rec.APIVersion, Kind: rec.Kind, Payload: rec.Payload}
		for _, ix := range rec.Index {
			r.Index = append(r.Index, indexEntryV1{Name: ix.Name, Values: ix.Values})
		}
		return encodeRecordV1(r)
	}), func(state *bolt.Bucket, _ int, put func(k, v []byte) error) error {
		for _, k := range v1StateKeys {
			if v := state.Get(k); v != nil {
				if err := put(k, v); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// rewriteStores copies a v1, v2 or v3 file into dst at schema version to:
// meta with the new version, and per store its state (through state), its
// records (through record), its index buckets and a relist's seen bucket as
// they are. Records are converted on every core (convertRecords). Nothing
// is held on the heap beyond one transaction's batch and the records in
// flight.
func rewriteStores(src *bolt.Tx, dst *bolt.DB, e *env, to uint64,
	newRecord func() recordFunc,
	state func(state *bolt.Bucket, count int, put func(k, v []byte) error) error,
) error {
	w := newBatchWriter(dst, e.txMaxSize)
	defer w.rollback()
	meta := src.Bucket(cachefile.MetaBucket)
	if meta == nil {
		return fmt.Errorf("%w: no meta bucket", ErrLayout)
	}
	metaPath := [][]byte{cachefile.MetaBucket}
	err := meta.ForEach(func(k, v []byte) error {
		if cachefile.IsCompatKey(k) {
			return nil // what version to allows, written below
		}
		if bytes.Equal(k, cachefile.MetaSchemaVersion) {
			v = []byte(strconv.FormatUint(to, 10))
		}
		if bytes.Equal(k, cachefile.MetaWriterVersion) {
			v = []byte(e.writer)
		}
		return w.put(metaPath, k, v)
	})
	if err != nil {
		return err
	}
	for _, kv := range cachefile.CompatEntries(to) {
		if err := w.put(metaPath, kv[0], kv[1]); err != nil {
			return err
		}
	}
	stores := src.Bucket(cachefile.StoresBucket)
	if stores == nil {
		return fmt.Errorf("%w: no stores bucket", ErrLayout)
	}
	if _, err := w.bucket(cachefile.StoresBucket); err != nil {
		return err
	}
	err = stores.ForEachBucket(func(name []byte) error {
		root := stores.Bucket(name)
		st, objects, idx := root.Bucket(cachefile.StateBucket), root.Bucket(cachefile.ObjectsBucket), root.Bucket(cachefile.IndexBucket)
		if st == nil || objects == nil || idx == nil {
			return fmt.Errorf("%w: store %s lacks its state, objects or idx bucket", ErrLayout, name)
		}
		objectsPath := [][]byte{cachefile.StoresBucket, name, cachefile.ObjectsBucket}
		if _, err := w.bucket(objectsPath...); err != nil {
			return err
		}
		count, err := convertRecords(objects, name, w, objectsPath, newRecord)
		if err != nil {
			return err
		}
		statePath := [][]byte{cachefile.StoresBucket, name, cachefile.StateBucket}
		if _, err := w.bucket(statePath...); err != nil {
			return err
		}
		if err := state(st, count, func(k, v []byte) error { return w.put(statePath, k, v) }); err != nil {
			return fmt.Errorf("store %s: %w", name, err)
		}
		if err := copyBucket(idx, w, cachefile.StoresBucket, name, cachefile.IndexBucket); err != nil {
			return fmt.Errorf("store %s: %w", name, err)
		}
		if seen := root.Bucket(cachefile.SeenBucket); seen != nil {
			if err := copyBucket(seen, w, cachefile.StoresBucket, name, cachefile.SeenBucket); err != nil {
				return fmt.Errorf("store %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.commit()
}

// stateless is the newRecord of a recordFunc that keeps nothing between
// calls: every goroutine shares it.
func stateless(f recordFunc) func() recordFunc { return func() recordFunc { return f } }

// copyBucket copies b and its nested buckets to path in w.
func copyBucket(b *bolt.Bucket, w *batchWriter, path ...[]byte) error {
	if _, err := w.bucket(path...); err != nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error {
		if v == nil && b.Bucket(k) != nil {
			sub := append(append([][]byte{}, path...), k)
			return copyBucket(b.Bucket(k), w, sub...)
		}
		return w.put(path, k, v)
	})
}
