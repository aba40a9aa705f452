package migrations

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	v0 "github.com/boltinformer/boltinformer/migrations/internal/v0"
)

// registry lists every step this build knows, oldest first.
var registry = []step{
	{
		from: 0, to: 1,
		up: change{
			description: "write meta (schema-version, created-at, writer-version); move every store under stores/ " +
				"with a state bucket (rv, indexers); turn index/<name>/<value>/<key> buckets into idx/<name>/ " +
				"\"value 0x00 key\" entries; add each record's index values to its envelope",
			rewrite: upV0V1,
		},
		down: &change{
			description: "move every store back to the top level with its rv, turn idx entries into value buckets, " +
				"drop records' index values, and drop meta, identities, index version tags and updated-at " +
				"(a store in the middle of a relist loses its rv, so it relists)",
			rewrite: downV1V0,
		},
	},
	stepV1V2,
	stepV2V3,
}

// upV0V1 rewrites a schema v0 file as schema v1. Index values are gathered
// per key in a scratch file (key 0x00 value → empty) so that neither the
// index nor the records are ever held on the heap.
func upV0V1(src *bolt.Tx, dst *bolt.DB, e *env) error {
	w := newBatchWriter(dst, e.txMaxSize)
	defer w.rollback()
	meta := [][]byte{cachefile.MetaBucket}
	for _, kv := range [][2][]byte{
		{cachefile.MetaSchemaVersion, []byte("1")},
		{cachefile.MetaCreatedAt, []byte(e.now.UTC().Format(time.RFC3339))},
		{cachefile.MetaWriterVersion, []byte(e.writer)},
	} {
		if err := w.put(meta, kv[0], kv[1]); err != nil {
			return err
		}
	}
	if _, err := w.bucket(cachefile.StoresBucket); err != nil {
		return err
	}
	var names [][]byte
	_ = src.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if v0.IsStore(name) {
			names = append(names, name)
		}
		return nil
	})
	if len(names) > 0 {
		scratch, err := createWork(e.scratchPath, 0)
		if err != nil {
			return err
		}
		defer discardWork(scratch)
		for _, name := range names {
			if err := upStoreV0V1(src.Bucket(name), name, w, scratch, e); err != nil {
				return fmt.Errorf("store %s: %w", name, err)
			}
		}
	}
	return w.commit()
}

func upStoreV0V1(root *bolt.Bucket, name []byte, w *batchWriter, scratch *bolt.DB, e *env) error {
	objects, index := root.Bucket(v0.ObjectsBucket), root.Bucket(v0.IndexBucket)
	if objects == nil || index == nil {
		return fmt.Errorf("%w: v0 store lacks objects or index bucket", ErrLayout)
	}
	var rv []byte
	err := root.ForEach(func(k, v []byte) error {
		switch {
		case bytes.Equal(k, v0.ObjectsBucket), bytes.Equal(k, v0.IndexBucket):
			return nil
		case bytes.Equal(k, v0.RVKey) && root.Bucket(k) == nil:
			rv = v
			return nil
		}
		return fmt.Errorf("%w: unexpected entry %q in v0 store", ErrLayout, k)
	})
	if err != nil {
		return err
	}
	statePath := [][]byte{cachefile.StoresBucket, name, cachefile.StateBucket}
	objectsPath := [][]byte{cachefile.StoresBucket, name, cachefile.ObjectsBucket}
	for _, p := range [][][]byte{statePath, objectsPath, {cachefile.StoresBucket, name, cachefile.IndexBucket}} {
		if _, err := w.bucket(p...); err != nil {
			return err
		}
	}
	var indexes [][]byte
	err = index.ForEach(func(k, _ []byte) error {
		if index.Bucket(k) == nil {
			return fmt.Errorf("%w: index bucket holds a value %q", ErrLayout, k)
		}
		indexes = append(indexes, k)
		return nil
	})
	if err != nil {
		return err
	}

	// Index entries: write the v1 composite keys, and the same pairs
	// inverted into the scratch file for the records' index values.
	sw := newBatchWriter(scratch, e.txMaxSize)
	defer sw.rollback()
	for _, iname := range indexes {
		if err := upIndexV0V1(index.Bucket(iname), name, iname, objects, w, sw); err != nil {
			return fmt.Errorf("index %q: %w", iname, err)
		}
	}
	if err := sw.commit(); err != nil {
		return err
	}

	// Records, with their index values looked up in the scratch file.
	err = scratch.View(func(stx *bolt.Tx) error {
		sroot := stx.Bucket(name)
		c := objects.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if objects.Bucket(k) != nil {
				return fmt.Errorf("%w: objects holds a bucket %q", ErrLayout, k)
			}
			r0, err := v0.Decode(v)
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			r1 := &recordV1{
				Version: recordV1Version, RV: r0.RV, UID: r0.UID, Codec: r0.Codec,
				APIVersion: r0.APIVersion, Kind: r0.Kind, Payload: r0.Payload,
				Index: make([]indexEntryV1, 0, len(indexes)),
			}
			for _, iname := range indexes {
				r1.Index = append(r1.Index, indexEntryV1{Name: string(iname), Values: scratchValues(sroot, iname, k)})
			}
			enc, err := encodeRecordV1(r1)
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			if err := w.put(objectsPath, k, enc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}

	versions := make(map[string]string, len(indexes))
	for _, iname := range indexes {
		versions[string(iname)] = ""
	}
	indexers, err := json.Marshal(versions)
	if err != nil {
		return err
	}
	state := [][2][]byte{
		{cachefile.StateIndexers, indexers},
		{cachefile.StateUpdatedAt, []byte(e.now.UTC().Format(time.RFC3339Nano))},
	}
	if rv != nil {
		state = append(state, [2][]byte{cachefile.StateRV, rv})
	}
	for _, kv := range state {
		if err := w.put(statePath, kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

func upIndexV0V1(ib *bolt.Bucket, store, iname []byte, objects *bolt.Bucket, w, sw *batchWriter) error {
	dstPath := [][]byte{cachefile.StoresBucket, store, cachefile.IndexBucket, iname}
	scratchPath := [][]byte{store, iname}
	if _, err := w.bucket(dstPath...); err != nil {
		return err
	}
	return ib.ForEach(func(vname, _ []byte) error {
		value, ok := v0.ParseValueBucket(vname)
		vb := ib.Bucket(vname)
		if !ok || vb == nil {
			return fmt.Errorf("%w: entry %q is not a value bucket", ErrLayout, vname)
		}
		if bytes.IndexByte(vname, cachefile.IndexSeparator) >= 0 {
			return fmt.Errorf("%w: value %q contains a NUL byte", ErrLayout, value)
		}
		return vb.ForEach(func(key, _ []byte) error {
			if bytes.IndexByte(key, cachefile.IndexSeparator) >= 0 {
				return fmt.Errorf("%w: value %q: key %q contains a NUL byte", ErrLayout, value, key)
			}
			if objects.Get(key) == nil {
				return fmt.Errorf("%w: value %q points to missing key %q", ErrLayout, value, key)
			}
			if err := w.put(dstPath, join(vname[1:], key), nil); err != nil {
				return err
			}
			return sw.put(scratchPath, join(key, vname[1:]), nil)
		})
	})
}

// scratchValues returns the values of index iname recorded for key in the
// scratch file, sorted; never nil.
func scratchValues(sroot *bolt.Bucket, iname, key []byte) []string {
	vals := []string{}
	if sroot == nil {
		return vals
	}
	sb := sroot.Bucket(iname)
	if sb == nil {
		return vals
	}
	prefix := join(key, nil)
	c := sb.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		vals = append(vals, string(k[len(prefix):]))
	}
	return vals
}

// join returns a 0x00 b in a new slice.
func join(a, b []byte) []byte {
	out := make([]byte, 0, len(a)+1+len(b))
	out = append(out, a...)
	out = append(out, cachefile.IndexSeparator)
	return append(out, b...)
}

// downV1V0 rewrites a schema v1 file as schema v0.
func downV1V0(src *bolt.Tx, dst *bolt.DB, e *env) error {
	stores := src.Bucket(cachefile.StoresBucket)
	if stores == nil {
		return fmt.Errorf("%w: v1 file has no stores bucket", ErrLayout)
	}
	err := src.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if bytes.Equal(name, cachefile.MetaBucket) || bytes.Equal(name, cachefile.StoresBucket) {
			return nil
		}
		return fmt.Errorf("%w: unexpected top-level bucket %q in a v1 file", ErrLayout, name)
	})
	if err != nil {
		return err
	}
	w := newBatchWriter(dst, e.txMaxSize)
	defer w.rollback()
	err = stores.ForEach(func(name, _ []byte) error {
		root := stores.Bucket(name)
		if root == nil {
			return fmt.Errorf("%w: stores bucket holds a value %q", ErrLayout, name)
		}
		if err := downStoreV1V0(root, name, w); err != nil {
			return fmt.Errorf("store %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.commit()
}

func downStoreV1V0(root *bolt.Bucket, name []byte, w *batchWriter) error {
	if !v0.IsStore(name) {
		return fmt.Errorf("%w: a store named %q cannot be told from v0's meta bucket", ErrIrreversible, name)
	}
	state, objects, idx := root.Bucket(cachefile.StateBucket), root.Bucket(cachefile.ObjectsBucket), root.Bucket(cachefile.IndexBucket)
	if state == nil || objects == nil || idx == nil {
		return fmt.Errorf("%w: v1 store lacks state, objects or idx bucket", ErrLayout)
	}
	objectsPath := [][]byte{name, v0.ObjectsBucket}
	for _, p := range [][][]byte{objectsPath, {name, v0.IndexBucket}} {
		if _, err := w.bucket(p...); err != nil {
			return err
		}
	}
	if rv := state.Get(cachefile.StateRV); len(rv) > 0 && state.Get(cachefile.StateRelist) == nil {
		if err := w.put([][]byte{name}, v0.RVKey, rv); err != nil {
			return err
		}
	}
	c := objects.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if objects.Bucket(k) != nil {
			return fmt.Errorf("%w: objects holds a bucket %q", ErrLayout, k)
		}
		r1, err := decodeRecordV1(v)
		if err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		enc, err := v0.Encode(&v0.Record{
			Version: v0.RecordVersion, RV: r1.RV, UID: r1.UID, Codec: r1.Codec,
			APIVersion: r1.APIVersion, Kind: r1.Kind, Payload: r1.Payload,
		})
		if err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		if err := w.put(objectsPath, k, enc); err != nil {
			return err
		}
	}
	return idx.ForEach(func(iname, _ []byte) error {
		ib := idx.Bucket(iname)
		if ib == nil {
			return fmt.Errorf("%w: idx bucket holds a value %q", ErrLayout, iname)
		}
		if _, err := w.bucket(name, v0.IndexBucket, iname); err != nil {
			return err
		}
		return ib.ForEach(func(ik, _ []byte) error {
			i := bytes.IndexByte(ik, cachefile.IndexSeparator)
			if i < 0 || i == len(ik)-1 {
				return fmt.Errorf("%w: index %q entry %q is not value 0x00 key", ErrLayout, iname, ik)
			}
			value, key := ik[:i], ik[i+1:]
			return w.put([][]byte{name, v0.IndexBucket, iname, v0.ValueBucket(string(value))}, key, nil)
		})
	})
}
