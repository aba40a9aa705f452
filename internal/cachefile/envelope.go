package cachefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// This file reads and writes the record envelope by hand: a record is read
// on every Get, List and ByIndex, and a general msgpack decoder costs
// allocations and reflection the fixed layout does not need. The bytes are
// exactly what github.com/vmihailenco/msgpack/v5 writes for the same
// values (fixarray/array16/array32, positive fixint/uint8…uint64,
// fixstr/str8/str16/str32, bin8/bin16/bin32 or nil); record_test.go and
// FuzzRecordEnvelope check both against that library.

// msgpack type codes the envelope uses.
const (
	mpFixArrayLow  = 0x90
	mpFixArrayHigh = 0x9f
	mpFixStrLow    = 0xa0
	mpFixStrHigh   = 0xbf
	mpNil          = 0xc0
	mpBin8         = 0xc4
	mpBin16        = 0xc5
	mpBin32        = 0xc6
	mpUint8        = 0xcc
	mpUint16       = 0xcd
	mpUint32       = 0xce
	mpUint64       = 0xcf
	mpStr8         = 0xd9
	mpStr16        = 0xda
	mpStr32        = 0xdb
	mpArray16      = 0xdc
	mpArray32      = 0xdd
)

var errShort = errors.New("unexpected end of envelope")

// RecordView is a parsed envelope whose byte fields alias the stored value:
// a read that only decodes the payload parses it without allocating. It is
// valid only while the bytes it was parsed from are (inside the bbolt
// transaction, for a value read from the file).
type RecordView struct {
	Version     uint8
	RV, UID     []byte
	Codec       Codec
	Compression Compression
	APIVersion  []byte
	Kind        []byte
	KeyID       []byte
	Payload     []byte
	// index is the msgpack array of index entries, already validated.
	index []byte
}

// ParseRecord verifies the checksum of the value stored under key (once)
// and parses its envelope, which must be of the version this build writes.
// Every failure wraps ErrCorruptRecord.
func ParseRecord(key, data []byte, v *RecordView) error {
	return parseRecordVersion(key, data, RecordVersion, v)
}

func parseRecordVersion(key, data []byte, version uint8, v *RecordView) error {
	if len(data) < crcSize {
		return fmt.Errorf("%w: %d bytes, shorter than its checksum", ErrCorruptRecord, len(data))
	}
	body := data[:len(data)-crcSize]
	want := binary.BigEndian.Uint32(data[len(data)-crcSize:])
	if got := recordCRC(key, body); got != want {
		return fmt.Errorf("%w: checksum mismatch (stored %08x, computed %08x)", ErrCorruptRecord, want, got)
	}
	if err := v.parse(body, version); err != nil {
		return fmt.Errorf("%w: envelope: %v", ErrCorruptRecord, err)
	}
	return nil
}

// envelopeFields is the number of fields of each envelope version.
func envelopeFields(version uint8) int {
	if version >= 3 {
		return 10
	}
	return 9
}

// parse reads an envelope of the given version from body (no checksum).
func (v *RecordView) parse(body []byte, version uint8) error {
	r := mpReader{b: body}
	n, err := r.arrayLen()
	if err != nil {
		return err
	}
	if want := envelopeFields(version); n != want {
		return fmt.Errorf("%d fields, want %d", n, want)
	}
	got, err := r.uint()
	if err != nil {
		return err
	}
	if got != uint64(version) {
		return fmt.Errorf("envelope version %d, want %d", got, version)
	}
	v.Version = version
	if v.RV, err = r.str(); err != nil {
		return err
	}
	if v.UID, err = r.str(); err != nil {
		return err
	}
	codec, err := r.uint()
	if err != nil {
		return err
	}
	v.Codec = Codec(codec)
	switch v.Codec {
	case CodecProtobuf, CodecJSON, CodecUnstructuredJSON:
	default:
		return fmt.Errorf("unknown codec %d", codec)
	}
	v.Compression = CompressionNone
	if version >= 3 {
		c, err := r.uint()
		if err != nil {
			return err
		}
		v.Compression = Compression(c)
		switch v.Compression {
		case CompressionNone, CompressionS2:
		default:
			return fmt.Errorf("unknown compression %d", c)
		}
	}
	if v.APIVersion, err = r.str(); err != nil {
		return err
	}
	if v.Kind, err = r.str(); err != nil {
		return err
	}
	if v.KeyID, err = r.str(); err != nil {
		return err
	}
	if v.Payload, err = r.bin(); err != nil {
		return err
	}
	start := r.off
	entries, err := r.arrayLen()
	if err != nil {
		return err
	}
	for i := range entries {
		if m, err := r.arrayLen(); err != nil || m != 2 {
			return fmt.Errorf("index entry %d: %d fields, %v", i, m, err)
		}
		if _, err := r.str(); err != nil {
			return err
		}
		values, err := r.arrayLen()
		if err != nil {
			return err
		}
		for range values {
			if _, err := r.str(); err != nil {
				return err
			}
		}
	}
	if r.off != len(body) {
		return fmt.Errorf("%d bytes after the envelope", len(body)-r.off)
	}
	v.index = body[start:]
	return nil
}

// Record copies the view into a Record (strings and index values copied;
// Payload still aliases the stored bytes).
func (v *RecordView) Record() *Record {
	rec := &Record{
		RV: string(v.RV), UID: string(v.UID), Codec: v.Codec, Compression: v.Compression,
		APIVersion: string(v.APIVersion), Kind: string(v.Kind), KeyID: string(v.KeyID),
	}
	if len(v.Payload) > 0 {
		rec.Payload = v.Payload
	}
	// The index entries were validated by parse; errors cannot happen here.
	r := mpReader{b: v.index}
	entries, _ := r.arrayLen()
	if entries > 0 {
		rec.Index = make([]IndexValues, entries)
	}
	for i := range entries {
		_, _ = r.arrayLen()
		name, _ := r.str()
		values, _ := r.arrayLen()
		e := IndexValues{Name: string(name), Values: make([]string, values)}
		for j := range values {
			s, _ := r.str()
			e.Values[j] = string(s)
		}
		rec.Index[i] = e
	}
	return rec
}

// mpReader reads msgpack values from b with bounds checks.
type mpReader struct {
	b   []byte
	off int
}

func (r *mpReader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errShort
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

// size reads an n-byte big-endian length.
func (r *mpReader) size(n int) (int, error) {
	if len(r.b)-r.off < n {
		return 0, errShort
	}
	var v uint64
	for _, c := range r.b[r.off : r.off+n] {
		v = v<<8 | uint64(c)
	}
	r.off += n
	if v > math.MaxInt32 {
		return 0, fmt.Errorf("length %d too large", v)
	}
	return int(v), nil
}

func (r *mpReader) take(n int) ([]byte, error) {
	if n < 0 || len(r.b)-r.off < n {
		return nil, fmt.Errorf("%d bytes wanted, %d left", n, len(r.b)-r.off)
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s, nil
}

// arrayLen reads an array header; the length is bounded by the bytes left
// (every element takes at least one), so a damaged length cannot make a
// caller allocate more than the record's size.
func (r *mpReader) arrayLen() (int, error) {
	c, err := r.byte()
	if err != nil {
		return 0, err
	}
	var n int
	switch {
	case c >= mpFixArrayLow && c <= mpFixArrayHigh:
		n = int(c - mpFixArrayLow)
	case c == mpArray16:
		n, err = r.size(2)
	case c == mpArray32:
		n, err = r.size(4)
	default:
		return 0, fmt.Errorf("code %#x is not an array", c)
	}
	if err != nil {
		return 0, err
	}
	if n > len(r.b)-r.off {
		return 0, fmt.Errorf("array of %d, %d bytes left", n, len(r.b)-r.off)
	}
	return n, nil
}

func (r *mpReader) uint() (uint64, error) {
	c, err := r.byte()
	if err != nil {
		return 0, err
	}
	var n int
	switch {
	case c <= 0x7f:
		return uint64(c), nil
	case c == mpUint8:
		n = 1
	case c == mpUint16:
		n = 2
	case c == mpUint32:
		n = 4
	case c == mpUint64:
		n = 8
	default:
		return 0, fmt.Errorf("code %#x is not an unsigned integer", c)
	}
	b, err := r.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v, nil
}

// str reads a string (nil reads as empty).
func (r *mpReader) str() ([]byte, error) {
	c, err := r.byte()
	if err != nil {
		return nil, err
	}
	var n int
	switch {
	case c >= mpFixStrLow && c <= mpFixStrHigh:
		n = int(c - mpFixStrLow)
	case c == mpNil:
		return nil, nil
	case c == mpStr8:
		n, err = r.size(1)
	case c == mpStr16:
		n, err = r.size(2)
	case c == mpStr32:
		n, err = r.size(4)
	default:
		return nil, fmt.Errorf("code %#x is not a string", c)
	}
	if err != nil {
		return nil, err
	}
	return r.take(n)
}

// bin reads a byte string (nil reads as empty).
func (r *mpReader) bin() ([]byte, error) {
	c, err := r.byte()
	if err != nil {
		return nil, err
	}
	var n int
	switch c {
	case mpNil:
		return nil, nil
	case mpBin8:
		n, err = r.size(1)
	case mpBin16:
		n, err = r.size(2)
	case mpBin32:
		n, err = r.size(4)
	default:
		return nil, fmt.Errorf("code %#x is not a byte string", c)
	}
	if err != nil {
		return nil, err
	}
	return r.take(n)
}

// mpWriter appends msgpack values in the library's canonical forms.
type mpWriter struct{ b []byte }

func (w *mpWriter) arrayLen(n int) {
	switch {
	case n < 16:
		w.b = append(w.b, mpFixArrayLow|byte(n))
	case n <= math.MaxUint16:
		w.b = binary.BigEndian.AppendUint16(append(w.b, mpArray16), uint16(n))
	default:
		w.b = binary.BigEndian.AppendUint32(append(w.b, mpArray32), uint32(n))
	}
}

func (w *mpWriter) uint(v uint64) {
	switch {
	case v <= math.MaxInt8:
		w.b = append(w.b, byte(v))
	case v <= math.MaxUint8:
		w.b = append(w.b, mpUint8, byte(v))
	case v <= math.MaxUint16:
		w.b = binary.BigEndian.AppendUint16(append(w.b, mpUint16), uint16(v))
	case v <= math.MaxUint32:
		w.b = binary.BigEndian.AppendUint32(append(w.b, mpUint32), uint32(v))
	default:
		w.b = binary.BigEndian.AppendUint64(append(w.b, mpUint64), v)
	}
}

func (w *mpWriter) str(s string) {
	n := len(s)
	switch {
	case n < 32:
		w.b = append(w.b, mpFixStrLow|byte(n))
	case n < 256:
		w.b = append(w.b, mpStr8, byte(n))
	case n <= math.MaxUint16:
		w.b = binary.BigEndian.AppendUint16(append(w.b, mpStr16), uint16(n))
	default:
		w.b = binary.BigEndian.AppendUint32(append(w.b, mpStr32), uint32(n))
	}
	w.b = append(w.b, s...)
}

// bin writes a byte string; nil is msgpack nil, as the library writes it.
func (w *mpWriter) bin(p []byte) {
	n := len(p)
	switch {
	case p == nil:
		w.b = append(w.b, mpNil)
		return
	case n < 256:
		w.b = append(w.b, mpBin8, byte(n))
	case n <= math.MaxUint16:
		w.b = binary.BigEndian.AppendUint16(append(w.b, mpBin16), uint16(n))
	default:
		w.b = binary.BigEndian.AppendUint32(append(w.b, mpBin32), uint32(n))
	}
	w.b = append(w.b, p...)
}
