package cachefile

import (
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// A file outlives the build that wrote it, and a fleet rolls back. Each
// file records the oldest schema versions whose builds can still read it
// and write it (MetaMinReaderVersion, MetaMinWriterVersion), as SQLite's
// read and write version bytes and ext4's compat, ro_compat and incompat
// features do. A build opens a file of a newer schema when the file allows
// it: for reading if the build's Version is at least the file's minimum
// reader, for writing if it is at least the minimum writer. A later schema
// that only adds what older builds may ignore (a state key or a bucket
// they never look at) therefore keeps its minimums, and a rollback keeps
// the file and resumes from it; one that older builds would misread (a new
// record envelope) raises the minimum reader, and one that every write
// must keep current (an index of a new kind) raises the minimum writer.
// A file without the keys, written before they existed, needs a build of
// its own version.

// Minimums this build records in every file of its schema it writes: no
// build before v3 reads a v3 record (its payload may be compressed), and
// v3 is the first schema with these keys.
const (
	MinReaderVersion uint64 = 3
	MinWriterVersion uint64 = 3
)

// Compat is what a file says of the builds that can open it.
type Compat struct {
	// Version is the file's schema version.
	Version uint64
	// MinReader and MinWriter are the oldest schema versions whose builds
	// can read and write the file.
	MinReader, MinWriter uint64
}

// Readable reports whether this build can read the file as it is (an
// older file must be migrated first).
func (c Compat) Readable() bool {
	return c.Version == Version || c.Version > Version && c.MinReader <= Version
}

// Writable reports whether this build can write the file as it is.
func (c Compat) Writable() bool {
	return c.Version == Version || c.Version > Version && c.MinWriter <= Version
}

// String describes the file's schema and its minimums.
func (c Compat) String() string {
	return fmt.Sprintf("schema v%d (readable from v%d, writable from v%d)", c.Version, c.MinReader, c.MinWriter)
}

// ReadCompat reads a file's schema version and minimums from its meta
// bucket (nil: a file from before meta existed, schema v0). A minimum the
// file does not record is its own version.
func ReadCompat(meta *bolt.Bucket) (Compat, error) {
	var c Compat
	if meta == nil {
		return c, nil
	}
	parse := func(key []byte, def uint64) (uint64, error) {
		v := meta.Get(key)
		if v == nil {
			return def, nil
		}
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: meta %s %q: %v", ErrCorruptFile, key, v, err)
		}
		return n, nil
	}
	var err error
	if c.Version, err = parse(MetaSchemaVersion, 0); err != nil {
		return c, err
	}
	if c.MinReader, err = parse(MetaMinReaderVersion, c.Version); err != nil {
		return c, err
	}
	c.MinWriter, err = parse(MetaMinWriterVersion, c.Version)
	return c, err
}

// CompatEntries are the meta entries a file of schema version records
// about its minimums, as this build defines them (none before v3, which
// introduced them). Migrations write them with the version they reach.
func CompatEntries(version uint64) [][2][]byte {
	if version < 3 {
		return nil
	}
	return [][2][]byte{
		{MetaMinReaderVersion, []byte(strconv.FormatUint(MinReaderVersion, 10))},
		{MetaMinWriterVersion, []byte(strconv.FormatUint(MinWriterVersion, 10))},
	}
}

// IsCompatKey reports whether k is one of the meta keys CompatEntries writes.
func IsCompatKey(k []byte) bool {
	return string(k) == string(MetaMinReaderVersion) || string(k) == string(MetaMinWriterVersion)
}
