package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/cachefile"
	icachefile "github.com/boltinformer/boltinformer/internal/cachefile"
)

// A snapshot file is, in order:
//
//	magic          22 bytes  "boltinformer-snapshot\n"
//	format         uint32    big-endian, FormatVersion
//	header length  uint32    big-endian, bytes of the header
//	header         JSON      Header: schema version, stores with RV and object count, DB size, …
//	database       DBSize bytes: the cache file as bbolt's Tx.WriteTo copies it
//	checksum       32 bytes  SHA-256 of everything before it
//
// The database section is an ordinary cache file: Restore writes it out
// byte for byte. Everything a reader needs to judge the file (what it
// holds, whether it is complete, whether it is intact) is in the header and
// the trailer, so Status never has to open the database.

// FormatVersion is the snapshot format this build writes. Version 2 added
// StoreHeader.KeyIDs; this build still reads version 1, whose headers do
// not say whether a store is encrypted (Report.EncryptionRecorded false).
const FormatVersion uint32 = 2

// minFormatVersion is the oldest format this build reads.
const minFormatVersion uint32 = 1

// formatKeyIDs is the first format whose headers record StoreHeader.KeyIDs.
const formatKeyIDs uint32 = 2

const (
	magic = "boltinformer-snapshot\n"
	// prefixLen is the size of magic, format and header length.
	prefixLen = len(magic) + 4 + 4
	// maxHeaderLen bounds the header a reader will allocate.
	maxHeaderLen = 16 << 20
	checksumLen  = sha256.Size
)

// Header describes a snapshot. It is written before the database, as JSON.
type Header struct {
	// SchemaVersion is the cache file's schema version.
	SchemaVersion uint64 `json:"schemaVersion"`
	// TakenAt is when the snapshot's read transaction began.
	TakenAt time.Time `json:"takenAt"`
	// Source is the path of the cache file the snapshot was taken from.
	Source string `json:"source,omitempty"`
	// FileCreatedAt and WriterVersion are the cache file's meta data.
	FileCreatedAt string `json:"fileCreatedAt,omitempty"`
	WriterVersion string `json:"writerVersion,omitempty"`
	// TxID is the bbolt transaction the snapshot copies.
	TxID int `json:"txID"`
	// DBSize is the size of the database section in bytes.
	DBSize int64 `json:"dbSize"`
	// Stores are the cache's stores, by name.
	Stores []StoreHeader `json:"stores"`
}

// StoreHeader describes one store of a snapshot.
type StoreHeader struct {
	// Name is the store's name, as cachefile.StoreInfo has it.
	Name string `json:"name"`
	// RV is the resourceVersion the store is current to; an informer on the
	// restored file resumes its watch from it.
	RV string `json:"rv"`
	// Objects is the number of objects stored.
	Objects int `json:"objects"`
	// Relisting is set when the snapshot caught the store in the middle of a
	// relist: a restored store then relists before serving its RV.
	Relisting bool `json:"relisting,omitempty"`
	// Identity says what the store caches (nil if it never recorded it).
	Identity *cachefile.Identity `json:"identity,omitempty"`
	// IndexVersions are the version tags of the store's indexes
	// (InformerOptions.IndexVersions).
	IndexVersions map[string]string `json:"indexVersions,omitempty"`
	// KeyIDs are the encryption keys some of the store's payloads are
	// sealed with, sorted (format 2 on; empty: every payload is plaintext).
	// The snapshot carries the ciphertext as stored: restoring it needs
	// the same key file to read them.
	KeyIDs []string `json:"keyIDs,omitempty"`
}

// Encrypted reports whether any store of the snapshot holds sealed payloads.
func (h Header) Encrypted() bool {
	for _, s := range h.Stores {
		if len(s.KeyIDs) > 0 {
			return true
		}
	}
	return false
}

// Report is what Status learns from a snapshot file.
type Report struct {
	Path string
	// Size is the snapshot file's size in bytes.
	Size          int64
	FormatVersion uint32
	Header        Header
	// Checksum is the SHA-256 recorded in the file; Computed is that of its
	// content. ChecksumValid says whether they match.
	Checksum, Computed string
	ChecksumValid      bool
	// EncryptionRecorded says whether the header records each store's
	// KeyIDs (format 2 on); a format 1 snapshot does not say.
	EncryptionRecorded bool
}

// headerFromInfo builds the header of a snapshot of a file.
func headerFromInfo(fi icachefile.FileInfo) Header {
	h := Header{
		SchemaVersion: fi.SchemaVersion,
		FileCreatedAt: fi.CreatedAt,
		WriterVersion: fi.WriterVersion,
		Stores:        make([]StoreHeader, 0, len(fi.Stores)),
	}
	for _, s := range fi.Stores {
		sh := StoreHeader{Name: s.Name, RV: s.RV, Objects: s.Objects, Relisting: s.Relisting}
		if s.Identity != nil {
			id := cachefile.Identity(*s.Identity)
			sh.Identity = &id
		}
		if len(s.IndexVersions) > 0 {
			sh.IndexVersions = s.IndexVersions
		}
		h.Stores = append(h.Stores, sh)
	}
	return h
}

// keyIDsTx lists the key ids sealing the records of each store, by store
// name. It reads every record's envelope (not its payload) in tx.
func keyIDsTx(tx *bolt.Tx) (map[string][]string, error) {
	out := map[string][]string{}
	err := icachefile.ForEachStoreTx(tx, func(name string, b *icachefile.Buckets, err error) error {
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		err = b.Objects.ForEach(func(k, v []byte) error {
			rec, err := icachefile.DecodeRecord(k, v)
			if err != nil {
				return fmt.Errorf("store %s key %q: %w", name, k, err)
			}
			if rec.KeyID != "" && !seen[rec.KeyID] {
				seen[rec.KeyID] = true
				out[name] = append(out[name], rec.KeyID)
			}
			return nil
		})
		sort.Strings(out[name])
		return err
	})
	return out, err
}

// writePrefix writes magic, format, header length and header.
func writePrefix(w io.Writer, hdr []byte) error {
	buf := make([]byte, 0, prefixLen+len(hdr))
	buf = append(buf, magic...)
	buf = binary.BigEndian.AppendUint32(buf, FormatVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(hdr)))
	buf = append(buf, hdr...)
	_, err := w.Write(buf)
	return err
}

// reader is an open snapshot whose prefix and header have been read and
// validated against the file's size; hash has consumed them.
type reader struct {
	f      *os.File
	path   string
	size   int64
	format uint32
	header Header
	hash   hash.Hash
}

// openSnapshot opens path and reads everything before the database.
func openSnapshot(path string) (*reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open snapshot %s: %w", path, err)
	}
	r := &reader{f: f, path: path, hash: sha256.New()}
	if err := r.readHeader(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return r, nil
}

func (r *reader) readHeader() error {
	fi, err := r.f.Stat()
	if err != nil {
		return err
	}
	r.size = fi.Size()
	prefix := make([]byte, prefixLen)
	n, err := io.ReadFull(r.f, prefix)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	got := prefix[:n]
	if !bytes.HasPrefix(got, []byte(magic)) {
		if n < len(magic) && bytes.HasPrefix([]byte(magic), got) && n > 0 {
			return fmt.Errorf("%w: file is %d bytes", ErrTruncated, r.size)
		}
		return ErrNotSnapshot
	}
	if n < prefixLen {
		return fmt.Errorf("%w: file is %d bytes", ErrTruncated, r.size)
	}
	r.format = binary.BigEndian.Uint32(prefix[len(magic):])
	if r.format < minFormatVersion || r.format > FormatVersion {
		return fmt.Errorf("%w: format v%d, this build reads v%d to v%d", ErrUnsupportedFormat, r.format, minFormatVersion, FormatVersion)
	}
	hlen := int64(binary.BigEndian.Uint32(prefix[len(magic)+4:]))
	if hlen > maxHeaderLen {
		return fmt.Errorf("%w: header length %d", ErrCorruptSnapshot, hlen)
	}
	if r.size < int64(prefixLen)+hlen+checksumLen {
		return fmt.Errorf("%w: file is %d bytes, its header alone needs %d", ErrTruncated, r.size, int64(prefixLen)+hlen+checksumLen)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r.f, hdr); err != nil {
		return err
	}
	r.hash.Write(prefix)
	r.hash.Write(hdr)
	if err := json.Unmarshal(hdr, &r.header); err != nil {
		return fmt.Errorf("%w: header does not parse: %v", ErrCorruptSnapshot, err)
	}
	want := int64(prefixLen) + hlen + r.header.DBSize + checksumLen
	switch {
	case r.header.DBSize <= 0:
		return fmt.Errorf("%w: header says the database is %d bytes", ErrCorruptSnapshot, r.header.DBSize)
	case r.size < want:
		return fmt.Errorf("%w: file is %d bytes, header says %d", ErrTruncated, r.size, want)
	case r.size > want:
		return fmt.Errorf("%w: file is %d bytes, header says %d", ErrCorruptSnapshot, r.size, want)
	}
	return nil
}

// copyDatabase copies the database section to w (which may be io.Discard)
// and reads the trailer; it returns the recorded and computed checksums.
func (r *reader) copyDatabase(w io.Writer) (recorded, computed []byte, err error) {
	if _, err := io.CopyN(io.MultiWriter(w, r.hash), r.f, r.header.DBSize); err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: read database: %w", r.path, err)
	}
	recorded = make([]byte, checksumLen)
	if _, err := io.ReadFull(r.f, recorded); err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: read checksum: %w", r.path, err)
	}
	return recorded, r.hash.Sum(nil), nil
}

func (r *reader) close() error { return r.f.Close() }

func hexString(b []byte) string { return hex.EncodeToString(b) }
