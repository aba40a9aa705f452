package cachefile

import bolt "go.etcd.io/bbolt"

// Layout (schema v3; v3 changed only the record envelope, see record.go):
//
//	meta/                      schema version, min reader and writer versions (compat.go), created-at, writer version
//	stores/<store name>/
//	    state/                 rv, rv-updated-at, count, cluster, identity, indexers, relist marker, updated-at, used-at
//	    objects/               key → record (see record.go)
//	    idx/<index name>/      value 0x00 key → empty
//	    seen/                  keys seen by the relist in progress (exists only during a relist)
//
// Every name below carries the schema version that introduced it. Nothing
// outside this package spells a bucket name or a state key.

// Version is the schema version this build writes. A file with a lower
// version must be migrated (package migrations); a file with a higher one is
// opened only as far as it allows (see compat.go).
const Version uint64 = 3

// recordVersionOf returns the record envelope version of a schema version
// this build can read records of (the current one and the one before, for
// migrations and check).
func recordVersionOf(schema uint64) (uint8, bool) {
	switch schema {
	case 2:
		return 2, true
	case 3:
		return 3, true
	}
	return 0, false
}

// fileRecordVersion is recordVersionOf for a file: a newer file this build
// may read (see compat.go) holds records of this build's envelope.
func fileRecordVersion(meta *bolt.Bucket, schema uint64) (uint8, bool) {
	if c, err := ReadCompat(meta); err == nil && schema > Version && c.Readable() {
		return RecordVersion, true
	}
	return recordVersionOf(schema)
}

// Top-level buckets.
var (
	// MetaBucket holds file-wide facts (since v0).
	MetaBucket = []byte("meta")
	// StoresBucket holds one sub-bucket per store (since v1).
	StoresBucket = []byte("stores")
)

// Keys in MetaBucket.
var (
	// MetaSchemaVersion is the decimal schema version (since v0).
	MetaSchemaVersion = []byte("schema-version")
	// MetaCreatedAt is the RFC 3339 time the file was created (since v1).
	MetaCreatedAt = []byte("created-at")
	// MetaWriterVersion names the build that last opened the file for writing (since v1).
	MetaWriterVersion = []byte("writer-version")
	// MetaMinReaderVersion is the decimal oldest schema version whose
	// builds can read the file (since v3; see compat.go).
	MetaMinReaderVersion = []byte("min-reader-version")
	// MetaMinWriterVersion is the decimal oldest schema version whose
	// builds can write the file (since v3; see compat.go).
	MetaMinWriterVersion = []byte("min-writer-version")
)

// Sub-buckets of stores/<name>/.
var (
	// StateBucket holds a store's scalar state (since v1).
	StateBucket = []byte("state")
	// ObjectsBucket maps object keys to records (since v1).
	ObjectsBucket = []byte("objects")
	// IndexBucket holds one sub-bucket per index (since v1).
	IndexBucket = []byte("idx")
	// SeenBucket records the keys a relist has seen so far (since v1).
	SeenBucket = []byte("seen")
)

// Keys in StateBucket.
var (
	// StateRV is the resourceVersion the store is current to (since v1).
	StateRV = []byte("rv")
	// StateRVUpdatedAt is the RFC 3339 time StateRV last moved (since v2).
	StateRVUpdatedAt = []byte("rv-updated-at")
	// StateCount is the decimal number of records in ObjectsBucket (since v2).
	StateCount = []byte("count")
	// StateCluster identifies the cluster the store's RV belongs to (since v2).
	StateCluster = []byte("cluster")
	// StateIdentity is the JSON identity of what the store caches (since v1).
	StateIdentity = []byte("identity")
	// StateIndexers is the JSON list of index names and their version tags (since v1).
	StateIndexers = []byte("indexers")
	// StateRelist is present while a relist is in progress; its value is the reason (since v1).
	StateRelist = []byte("relist")
	// StateUpdatedAt is the RFC 3339 time of the last commit to the store (since v1).
	StateUpdatedAt = []byte("updated-at")
	// StateUsedAt is the RFC 3339 time a program last opened the store for
	// writing (since v3; a build from before it ignores it, see prune.go).
	StateUsedAt = []byte("used-at")
)

// IndexSeparator separates the indexed value from the object key in an index
// entry: value 0x00 key (since v1).
const IndexSeparator byte = 0x00
