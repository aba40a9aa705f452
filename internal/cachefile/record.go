package cachefile

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
)

// RecordVersion is the envelope layout this build writes (schema v3; v2
// had no compression field).
const RecordVersion uint8 = 3

// Codec names the encoding of a record's payload. It is stored in every
// record, so the values must never be renumbered.
type Codec uint8

const (
	// CodecProtobuf is the generated protobuf encoding of a typed object
	// (every built-in Kubernetes type). TypeMeta is not part of the
	// protobuf message; it lives in the record envelope.
	CodecProtobuf Codec = 1
	// CodecJSON is encoding/json of a typed object that has no protobuf
	// methods (typically a CRD's Go type).
	CodecJSON Codec = 2
	// CodecUnstructuredJSON is the JSON of an unstructured object's content.
	CodecUnstructuredJSON Codec = 3
)

func (c Codec) String() string {
	switch c {
	case CodecProtobuf:
		return "protobuf"
	case CodecJSON:
		return "json"
	case CodecUnstructuredJSON:
		return "unstructured-json"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// Record is the value stored under an object's key: enough to compare
// resourceVersions and maintain indexes without decoding the payload.
//
// On disk it is a msgpack array
//
//	[3, rv, uid, codec, compression, apiVersion, kind, keyID, payload, [[index, [values…]]…]]
//
// (v2: the same without compression)
// followed by a 4-byte big-endian CRC-32C (Castagnoli) of the object's key
// and the array, so that a flipped byte, a torn write or a record under the
// wrong key is an error, never data. Any change to the layout needs a new
// RecordVersion, a schema version and a migration step.
type Record struct {
	RV    string
	UID   string
	Codec Codec
	// Compression is how Payload is compressed. A sealed payload was
	// compressed before it was sealed, so it must be opened first.
	Compression Compression
	APIVersion  string
	Kind        string
	// KeyID names the encryption key the payload is sealed with; empty
	// means the payload is plaintext.
	KeyID   string
	Payload []byte
	// Index holds, per index name in name order, the values the record was
	// indexed under when it was written (sorted, deduplicated; an empty list
	// when it has none), so that an update or delete removes exactly those
	// entries without running IndexFuncs on the old object.
	Index []IndexValues
}

// IndexValues are the values a record is indexed under in one index.
type IndexValues struct {
	Name   string
	Values []string
}

// crcSize is the length of the checksum trailer.
const crcSize = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Values returns the values of one index (nil when the record has none).
func (r *Record) Values(index string) []string {
	for i := range r.Index {
		if r.Index[i].Name == index {
			return r.Index[i].Values
		}
	}
	return nil
}

// HasIndex reports whether the record lists the index at all.
func (r *Record) HasIndex(index string) bool {
	for i := range r.Index {
		if r.Index[i].Name == index {
			return true
		}
	}
	return false
}

// SetValues replaces the values of one index (nil removes the index).
func (r *Record) SetValues(index string, values []string) {
	for i := range r.Index {
		if r.Index[i].Name == index {
			if values == nil {
				r.Index = append(r.Index[:i], r.Index[i+1:]...)
			} else {
				r.Index[i].Values = values
			}
			return
		}
	}
	if values != nil {
		r.Index = append(r.Index, IndexValues{Name: index, Values: values})
		sort.Slice(r.Index, func(a, b int) bool { return r.Index[a].Name < r.Index[b].Name })
	}
}

// EncodeRecord encodes r as the value to store under key, in the
// envelope this build writes.
func EncodeRecord(key []byte, r *Record) ([]byte, error) {
	return EncodeRecordVersion(key, r, RecordVersion)
}

// EncodeRecordVersion encodes r in the envelope of the given version (2 or
// 3). Only migrations write an older version; a v2 envelope has no place
// for a compressed payload, so r must not have one.
func EncodeRecordVersion(key []byte, r *Record, version uint8) ([]byte, error) {
	return appendRecordVersion(nil, key, r, version)
}

// AppendRecord appends the encoding EncodeRecord gives to dst and returns
// the extended slice; a writer that reuses its buffers passes one emptied
// (dst[:0]) once bbolt no longer holds what it wrote.
func AppendRecord(dst, key []byte, r *Record) ([]byte, error) {
	return appendRecordVersion(dst, key, r, RecordVersion)
}

func appendRecordVersion(dst, key []byte, r *Record, version uint8) ([]byte, error) {
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("encode record: envelope version %d, want 2 or 3", version)
	}
	if version < 3 && r.Compression != CompressionNone {
		return nil, fmt.Errorf("encode record: envelope v%d cannot hold a %s payload", version, r.Compression)
	}
	size := len(r.Payload) + len(r.RV) + len(r.UID) + len(r.APIVersion) + len(r.Kind) + len(r.KeyID) + 64 + crcSize
	for _, ix := range r.Index {
		size += len(ix.Name) + 8
		for _, v := range ix.Values {
			size += len(v) + 5
		}
	}
	start := len(dst)
	w := mpWriter{b: slices.Grow(dst, size)}
	w.arrayLen(envelopeFields(version))
	w.uint(uint64(version))
	w.str(r.RV)
	w.str(r.UID)
	w.uint(uint64(r.Codec))
	if version >= 3 {
		w.uint(uint64(r.Compression))
	}
	w.str(r.APIVersion)
	w.str(r.Kind)
	w.str(r.KeyID)
	w.bin(r.Payload)
	w.arrayLen(len(r.Index))
	for _, ix := range r.Index {
		w.arrayLen(2)
		w.str(ix.Name)
		w.arrayLen(len(ix.Values))
		for _, v := range ix.Values {
			w.str(v)
		}
	}
	return binary.BigEndian.AppendUint32(w.b, recordCRC(key, w.b[start:])), nil
}

func recordCRC(key, envelope []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, envelope)
}

// DecodeRecord verifies the checksum of the value stored under key and
// parses its envelope. Strings are copied; Payload aliases data, which may
// be bbolt memory valid only in its transaction: callers decode or copy the
// payload before the transaction ends. Every failure wraps ErrCorruptRecord.
func DecodeRecord(key, data []byte) (*Record, error) {
	return DecodeRecordVersion(key, data, RecordVersion)
}

// DecodeRecordVersion is DecodeRecord for an envelope of the given version
// (migrations read the version they migrate from).
func DecodeRecordVersion(key, data []byte, version uint8) (*Record, error) {
	var v RecordView
	if err := parseRecordVersion(key, data, version, &v); err != nil {
		return nil, err
	}
	return v.Record(), nil
}
