package boltindexer

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/schema"
)

// StoreInfo describes one store of a file without decoding any object.
type StoreInfo struct {
	Name     string
	Identity *Identity
	// RV is the resourceVersion the store is current to ("" if never synced).
	RV string
	// Relisting is true (with its reason) while a relist is in progress.
	Relisting    bool
	RelistReason string
	Objects      int
	UpdatedAt    time.Time
	// Indexes maps each index to its number of distinct values.
	Indexes map[string]int
	// IndexVersions are the stored version tags of the indexes.
	IndexVersions map[string]string
}

// FileInfo describes a cache file.
type FileInfo struct {
	SchemaVersion uint64
	CreatedAt     string
	WriterVersion string
	Stores        []StoreInfo
}

// Info reads the file's meta data and every store's state in one read transaction.
func (db *DB) Info() (FileInfo, error) {
	var fi FileInfo
	err := db.View(func(tx *bolt.Tx) error {
		var err error
		fi, err = InfoTx(tx)
		return err
	})
	return fi, err
}

// InfoTx is Info inside a caller's read transaction.
func InfoTx(tx *bolt.Tx) (FileInfo, error) {
	var fi FileInfo
	meta := tx.Bucket(schema.MetaBucket)
	if meta == nil {
		return fi, fmt.Errorf("%w: no meta bucket", ErrCorruptFile)
	}
	fmt.Sscan(string(meta.Get(schema.MetaSchemaVersion)), &fi.SchemaVersion)
	fi.CreatedAt = string(meta.Get(schema.MetaCreatedAt))
	fi.WriterVersion = string(meta.Get(schema.MetaWriterVersion))
	stores := tx.Bucket(schema.StoresBucket)
	if stores == nil {
		return fi, nil
	}
	err := stores.ForEachBucket(func(name []byte) error {
		si, err := storeInfo(stores.Bucket(name), string(name))
		if err != nil {
			return err
		}
		fi.Stores = append(fi.Stores, si)
		return nil
	})
	sort.Slice(fi.Stores, func(i, j int) bool { return fi.Stores[i].Name < fi.Stores[j].Name })
	return fi, err
}

func storeInfo(root *bolt.Bucket, name string) (StoreInfo, error) {
	si := StoreInfo{Name: name, Indexes: map[string]int{}, IndexVersions: map[string]string{}}
	state, objects, idx := root.Bucket(schema.StateBucket), root.Bucket(schema.ObjectsBucket), root.Bucket(schema.IndexBucket)
	if state == nil || objects == nil || idx == nil {
		return si, fmt.Errorf("%w: store %s lacks state, objects or idx bucket", ErrCorruptFile, name)
	}
	si.RV = string(state.Get(schema.StateRV))
	if v := state.Get(schema.StateRelist); v != nil {
		si.Relisting, si.RelistReason = true, string(v)
	}
	if v := state.Get(schema.StateIdentity); v != nil {
		si.Identity = &Identity{}
		if err := json.Unmarshal(v, si.Identity); err != nil {
			return si, fmt.Errorf("%w: store %s identity %q: %v", ErrCorruptFile, name, v, err)
		}
	}
	if v := state.Get(schema.StateIndexers); v != nil {
		if err := json.Unmarshal(v, &si.IndexVersions); err != nil {
			return si, fmt.Errorf("%w: store %s indexers %q: %v", ErrCorruptFile, name, v, err)
		}
	}
	if v := state.Get(schema.StateUpdatedAt); v != nil {
		si.UpdatedAt, _ = time.Parse(time.RFC3339Nano, string(v))
	}
	si.Objects = objects.Stats().KeyN
	err := idx.ForEachBucket(func(iname []byte) error {
		n := 0
		c := idx.Bucket(iname).Cursor()
		for k, _ := c.First(); k != nil; {
			v, _, ok := splitIndexKey(k)
			if !ok {
				return fmt.Errorf("%w: store %s index %q entry %q has no separator", ErrCorruptFile, name, iname, k)
			}
			n++
			k, _ = c.Seek(append([]byte(v), schema.IndexSeparator+1))
		}
		si.Indexes[string(iname)] = n
		return nil
	})
	return si, err
}
