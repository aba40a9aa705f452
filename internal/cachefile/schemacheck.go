package cachefile

import (
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// WriterVersion is recorded in the meta bucket by every process that opens
// a file for writing: it names the schema this build writes, so that a file
// says which build last wrote it.
var WriterVersion = "boltinformer/v" + strconv.FormatUint(Version, 10)

// checkSchema initialises an empty file at Version and refuses any other
// version. It never modifies a file that holds data. created reports that
// it initialised the file.
func (db *DB) checkSchema() (created bool, err error) {
	var version uint64
	var initialised bool
	var compat Compat
	read := func(tx *bolt.Tx) error {
		var err error
		if version, initialised, err = SchemaVersion(tx); err != nil || version == 0 {
			return err
		}
		compat, err = ReadCompat(tx.Bucket(MetaBucket))
		return err
	}
	// A file without a meta bucket makes SchemaVersion read every
	// top-level bucket: the lookups of the meta bucket do not cover that.
	var hasMeta bool
	err = db.ViewLookups(fileLookups, func(tx *bolt.Tx) error {
		if hasMeta = tx.Bucket(MetaBucket) != nil; hasMeta {
			return read(tx)
		}
		return nil
	})
	if err == nil && !hasMeta {
		err = db.View(read)
	}
	if err != nil {
		return false, fmt.Errorf("open %s: %w", db.path, err)
	}
	switch {
	case !initialised && db.opts.ReadOnly:
		return false, fmt.Errorf("open %s: %w: an empty bbolt file with no boltinformer meta data", db.path, ErrNotCacheFile)
	case !initialised:
		return true, db.bolt.Update(func(tx *bolt.Tx) error {
			meta, err := tx.CreateBucket(MetaBucket)
			if err != nil {
				return fmt.Errorf("initialise %s: %w", db.path, err)
			}
			if _, err := tx.CreateBucket(StoresBucket); err != nil {
				return fmt.Errorf("initialise %s: %w", db.path, err)
			}
			now := db.opts.Now().UTC().Format(time.RFC3339)
			for _, kv := range append([][2][]byte{
				{MetaSchemaVersion, []byte(strconv.FormatUint(Version, 10))},
				{MetaCreatedAt, []byte(now)},
				{MetaWriterVersion, []byte(WriterVersion)},
			}, CompatEntries(Version)...) {
				if err := meta.Put(kv[0], kv[1]); err != nil {
					return fmt.Errorf("initialise %s: %w", db.path, err)
				}
			}
			return nil
		})
	case version > Version && (db.opts.ReadOnly && !compat.Readable() || !db.opts.ReadOnly && !compat.Writable()):
		return false, &SchemaError{Path: db.path, Compat: compat, Write: !db.opts.ReadOnly}
	case version < Version:
		// No hint here: the caller knows how the file gets migrated
		// (boltinformer.Open does it by itself, cachectl names its command).
		return false, fmt.Errorf("open %s: %w: file is schema v%d, this build needs v%d", db.path, ErrNeedsMigration, version, Version)
	}
	if db.opts.ReadOnly {
		return false, nil
	}
	return false, db.bolt.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(MetaBucket)
		entries := [][2][]byte{{MetaWriterVersion, []byte(WriterVersion)}}
		if version == Version {
			// A newer file keeps the minimums its writer chose; a file of
			// this schema written before they existed gets them.
			entries = append(entries, CompatEntries(Version)...)
		}
		for _, kv := range entries {
			if err := meta.Put(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	})
}

// SchemaVersion reports the schema version of a file. initialised is false
// for a bbolt file with no buckets at all. A file with buckets but no meta
// bucket is schema v0 (the layout before meta existed) when every top-level
// bucket is laid out as a v0 store; otherwise it is another application's
// file (ErrNotCacheFile).
func SchemaVersion(tx *bolt.Tx) (version uint64, initialised bool, err error) {
	meta := tx.Bucket(MetaBucket)
	if meta == nil {
		empty := true
		err = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			empty = false
			if b == nil {
				// A key, not a bucket, at the top level (bbolt passes nil).
				return fmt.Errorf("%w: top-level key %q is not a bucket and there is no meta bucket", ErrNotCacheFile, name)
			}
			if b.Bucket([]byte("objects")) == nil || b.Bucket([]byte("index")) == nil {
				return fmt.Errorf("%w: bucket %q is not a boltinformer store and there is no meta bucket", ErrNotCacheFile, name)
			}
			return nil
		})
		return 0, !empty, err
	}
	v := meta.Get(MetaSchemaVersion)
	if v == nil {
		return 0, true, nil
	}
	version, err = strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%w: schema version %q: %v", ErrCorruptFile, v, err)
	}
	return version, true, nil
}
