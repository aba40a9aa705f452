package cachefile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/vmihailenco/msgpack/v5"
)

// RecordVersion is the envelope layout this build writes (schema v2).
const RecordVersion = 2

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
//	[2, rv, uid, codec, apiVersion, kind, keyID, payload, [[index, [values…]]…]]
//
// followed by a 4-byte big-endian CRC-32C (Castagnoli) of the object's key
// and the array, so that a flipped byte, a torn write or a record under the
// wrong key is an error, never data. Any change to the layout needs a new
// RecordVersion, a schema version and a migration step.
type Record struct {
	RV         string
	UID        string
	Codec      Codec
	APIVersion string
	Kind       string
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

// recordFields is the number of fields of the envelope array.
const recordFields = 9

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

// EncodeRecord encodes r as the value to store under key.
func EncodeRecord(key []byte, r *Record) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(r.Payload) + len(r.RV) + len(r.UID) + len(r.APIVersion) + len(r.Kind) + 64)
	e := msgpack.NewEncoder(&buf)
	err := e.EncodeArrayLen(recordFields)
	if err == nil {
		err = e.EncodeUint(RecordVersion)
	}
	for _, s := range []string{r.RV, r.UID} {
		if err == nil {
			err = e.EncodeString(s)
		}
	}
	if err == nil {
		err = e.EncodeUint(uint64(r.Codec))
	}
	for _, s := range []string{r.APIVersion, r.Kind, r.KeyID} {
		if err == nil {
			err = e.EncodeString(s)
		}
	}
	if err == nil {
		err = e.EncodeBytes(r.Payload)
	}
	if err == nil {
		err = e.EncodeArrayLen(len(r.Index))
	}
	for _, ix := range r.Index {
		if err == nil {
			err = e.EncodeArrayLen(2)
		}
		if err == nil {
			err = e.EncodeString(ix.Name)
		}
		if err == nil {
			err = e.EncodeArrayLen(len(ix.Values))
		}
		for _, v := range ix.Values {
			if err == nil {
				err = e.EncodeString(v)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	out := buf.Bytes()
	return binary.BigEndian.AppendUint32(out, recordCRC(key, out)), nil
}

func recordCRC(key, envelope []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, envelope)
}

// DecodeRecord verifies the checksum of the value stored under key and
// parses its envelope. Strings are copied; Payload aliases data, which may
// be bbolt memory valid only in its transaction: callers decode or copy the
// payload before the transaction ends. Every failure wraps ErrCorruptRecord.
func DecodeRecord(key, data []byte) (*Record, error) {
	if len(data) < crcSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than its checksum", ErrCorruptRecord, len(data))
	}
	body := data[:len(data)-crcSize]
	want := binary.BigEndian.Uint32(data[len(data)-crcSize:])
	if got := recordCRC(key, body); got != want {
		return nil, fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrCorruptRecord, want, got)
	}
	r := &Record{}
	if err := r.decode(body); err != nil {
		return nil, fmt.Errorf("%w: envelope: %v", ErrCorruptRecord, err)
	}
	return r, nil
}

func (r *Record) decode(data []byte) error {
	br := bytes.NewReader(data)
	// bytes.Reader is an io.ByteScanner: the decoder reads it directly,
	// without buffering, so br's offset is the decoder's.
	d := msgpack.NewDecoder(br)
	n, err := d.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != recordFields {
		return fmt.Errorf("%d fields, want %d", n, recordFields)
	}
	version, err := d.DecodeUint8()
	if err != nil {
		return err
	}
	if version != RecordVersion {
		return fmt.Errorf("envelope version %d, want %d", version, RecordVersion)
	}
	if r.RV, err = d.DecodeString(); err != nil {
		return err
	}
	if r.UID, err = d.DecodeString(); err != nil {
		return err
	}
	codec, err := d.DecodeUint8()
	if err != nil {
		return err
	}
	r.Codec = Codec(codec)
	switch r.Codec {
	case CodecProtobuf, CodecJSON, CodecUnstructuredJSON:
	default:
		return fmt.Errorf("unknown codec %d", codec)
	}
	if r.APIVersion, err = d.DecodeString(); err != nil {
		return err
	}
	if r.Kind, err = d.DecodeString(); err != nil {
		return err
	}
	if r.KeyID, err = d.DecodeString(); err != nil {
		return err
	}
	size, err := d.DecodeBytesLen()
	if err != nil {
		return err
	}
	if size > 0 {
		start := len(data) - br.Len()
		if size > br.Len() {
			return fmt.Errorf("payload of %d bytes, %d left", size, br.Len())
		}
		r.Payload = data[start : start+size : start+size]
		if _, err := br.Seek(int64(size), io.SeekCurrent); err != nil {
			return err
		}
	}
	entries, err := d.DecodeArrayLen()
	if err != nil {
		return err
	}
	if entries > br.Len() {
		return fmt.Errorf("%d index entries, %d bytes left", entries, br.Len())
	}
	for i := 0; i < entries; i++ {
		if m, err := d.DecodeArrayLen(); err != nil || m != 2 {
			return fmt.Errorf("index entry %d: %d fields, %v", i, m, err)
		}
		var e IndexValues
		if e.Name, err = d.DecodeString(); err != nil {
			return err
		}
		values, err := d.DecodeArrayLen()
		if err != nil {
			return err
		}
		if values > br.Len() {
			return fmt.Errorf("index %q: %d values, %d bytes left", e.Name, values, br.Len())
		}
		if values >= 0 {
			e.Values = make([]string, values)
		}
		for j := range values {
			if e.Values[j], err = d.DecodeString(); err != nil {
				return err
			}
		}
		r.Index = append(r.Index, e)
	}
	if br.Len() != 0 {
		return fmt.Errorf("%d bytes after the envelope", br.Len())
	}
	return nil
}
