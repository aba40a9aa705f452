package cachefile

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Identity says what a store caches. A store opened with an identity that
// differs from the stored one is emptied (the caller then relists): objects
// cached under another selector must never be reused silently.
type Identity struct {
	Group         string `json:"group,omitempty"`
	Version       string `json:"version,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Resource      string `json:"resource,omitempty"`
	Namespace     string `json:"namespace,omitempty"`
	LabelSelector string `json:"labelSelector,omitempty"`
	FieldSelector string `json:"fieldSelector,omitempty"`
	// Scope names anything else that decides which objects the store holds
	// and how they look (an informer factory's tweak and transform).
	Scope string `json:"scope,omitempty"`
}

// StoreInfo describes one store of a file without decoding any object.
type StoreInfo struct {
	Name     string
	Identity *Identity
	// RV is the resourceVersion the store is current to ("" if never synced).
	RV string
	// RVUpdatedAt is when RV last moved (zero if never).
	RVUpdatedAt time.Time
	// Cluster identifies the cluster RV belongs to ("" if not yet known).
	Cluster string
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
	// DataSize is the bytes up to the high-water page (bbolt's tx.Size):
	// the file is at least this long.
	DataSize int64
	PageSize int
	Stores   []StoreInfo
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

// InfoTx is Info inside a caller's read transaction. It reads state
// buckets and index keys, never a record.
func InfoTx(tx *bolt.Tx) (FileInfo, error) {
	fi := FileInfo{DataSize: tx.Size(), PageSize: tx.DB().Info().PageSize}
	meta := tx.Bucket(MetaBucket)
	if meta == nil {
		return fi, fmt.Errorf("%w: no meta bucket", ErrCorruptFile)
	}
	fmt.Sscan(string(meta.Get(MetaSchemaVersion)), &fi.SchemaVersion)
	fi.CreatedAt = string(meta.Get(MetaCreatedAt))
	fi.WriterVersion = string(meta.Get(MetaWriterVersion))
	err := ForEachStoreTx(tx, func(name string, b *Buckets, err error) error {
		if err != nil {
			return err
		}
		si, err := storeInfo(b, true)
		if err != nil {
			return err
		}
		fi.Stores = append(fi.Stores, si)
		return nil
	})
	return fi, err
}

// StoreStateTx describes store b from its state alone, as InfoTx does
// but without counting each index's values (which reads the whole index):
// Indexes has each index's name with a count of -1.
func StoreStateTx(b *Buckets) (StoreInfo, error) { return storeInfo(b, false) }

// countReleaseEvery is how many distinct index values storeInfo counts
// between two releases of the file's mapped pages (ReleaseMappedTx): each
// value's seek maps a page, and the kernel's fault-around its neighbours,
// into the reader's RSS, which an index of many values would fill.
const countReleaseEvery = 16

func storeInfo(b *Buckets, countValues bool) (StoreInfo, error) {
	si := StoreInfo{Name: b.Name, Indexes: map[string]int{}, IndexVersions: map[string]string{}}
	var err error
	if si.Identity, err = ReadIdentityTx(b); err != nil {
		return si, err
	}
	si.RV = string(b.State.Get(StateRV))
	si.Cluster = string(b.State.Get(StateCluster))
	if v := b.State.Get(StateRelist); v != nil {
		si.Relisting, si.RelistReason = true, string(v)
	}
	if v := b.State.Get(StateIndexers); v != nil {
		if err := json.Unmarshal(v, &si.IndexVersions); err != nil {
			return si, fmt.Errorf("%w: store %s indexers %q: %v", ErrCorruptFile, b.Name, v, err)
		}
	}
	si.UpdatedAt = parseTime(b.State.Get(StateUpdatedAt))
	si.RVUpdatedAt = parseTime(b.State.Get(StateRVUpdatedAt))
	if si.Objects, err = b.Count(); err != nil {
		return si, err
	}
	err = b.Idx.ForEachBucket(func(iname []byte) error {
		n := -1
		if !countValues {
			si.Indexes[string(iname)] = n
			return nil
		}
		n = 0
		tx := b.Idx.Tx()
		count := func(string) error {
			if n++; n%countReleaseEvery == 0 {
				return ReleaseMappedTx(tx)
			}
			return nil
		}
		if err := CountValuesTx(b.Idx.Bucket(iname), count); err != nil {
			return fmt.Errorf("store %s index %q: %w", b.Name, iname, err)
		}
		si.Indexes[string(iname)] = n
		return nil
	})
	return si, err
}

// ReadIdentityTx returns the store's stored identity (nil if none).
func ReadIdentityTx(b *Buckets) (*Identity, error) {
	v := b.State.Get(StateIdentity)
	if v == nil {
		return nil, nil
	}
	id := &Identity{}
	if err := json.Unmarshal(v, id); err != nil {
		return nil, fmt.Errorf("%w: store %s identity %q: %v", ErrCorruptFile, b.Name, v, err)
	}
	return id, nil
}

func parseTime(v []byte) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, string(v))
	return t
}

// FormatTime is how times are written in a store's state.
func FormatTime(t time.Time) []byte { return []byte(t.UTC().Format(time.RFC3339Nano)) }
