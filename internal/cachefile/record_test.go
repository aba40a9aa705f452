package cachefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// libEncode is the envelope as github.com/vmihailenco/msgpack/v5 writes it:
// the oracle for the hand-written encoder.
func libEncode(t testing.TB, r *Record, version uint8) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.EncodeArrayLen(envelopeFields(version)))
	must(e.EncodeUint(uint64(version)))
	must(e.EncodeString(r.RV))
	must(e.EncodeString(r.UID))
	must(e.EncodeUint(uint64(r.Codec)))
	if version >= 3 {
		must(e.EncodeUint(uint64(r.Compression)))
	}
	must(e.EncodeString(r.APIVersion))
	must(e.EncodeString(r.Kind))
	must(e.EncodeString(r.KeyID))
	must(e.EncodeBytes(r.Payload))
	must(e.EncodeArrayLen(len(r.Index)))
	for _, ix := range r.Index {
		must(e.EncodeArrayLen(2))
		must(e.EncodeString(ix.Name))
		must(e.EncodeArrayLen(len(ix.Values)))
		for _, v := range ix.Values {
			must(e.EncodeString(v))
		}
	}
	return buf.Bytes()
}

// libDecode parses an envelope body with the msgpack library: the oracle
// for the hand-written parser. It accepts everything the parser does (and
// more: other integer and string codes).
func libDecode(body []byte, version uint8) (*Record, error) {
	br := bytes.NewReader(body)
	d := msgpack.NewDecoder(br)
	n, err := d.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	if n != envelopeFields(version) {
		return nil, fmt.Errorf("%d fields", n)
	}
	v, err := d.DecodeUint64()
	if err != nil || v != uint64(version) {
		return nil, fmt.Errorf("version %d %v", v, err)
	}
	r := &Record{}
	if r.RV, err = d.DecodeString(); err != nil {
		return nil, err
	}
	if r.UID, err = d.DecodeString(); err != nil {
		return nil, err
	}
	c, err := d.DecodeUint64()
	if err != nil {
		return nil, err
	}
	r.Codec = Codec(c)
	if version >= 3 {
		c, err := d.DecodeUint64()
		if err != nil {
			return nil, err
		}
		r.Compression = Compression(c)
	}
	for _, s := range []*string{&r.APIVersion, &r.Kind, &r.KeyID} {
		if *s, err = d.DecodeString(); err != nil {
			return nil, err
		}
	}
	size, err := d.DecodeBytesLen()
	if err != nil {
		return nil, err
	}
	if size > 0 {
		start := len(body) - br.Len()
		if size > br.Len() {
			return nil, io.ErrUnexpectedEOF
		}
		r.Payload = body[start : start+size]
		if _, err := br.Seek(int64(size), io.SeekCurrent); err != nil {
			return nil, err
		}
	}
	entries, err := d.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	for range max(entries, 0) {
		if m, err := d.DecodeArrayLen(); err != nil || m != 2 {
			return nil, fmt.Errorf("entry: %d %v", m, err)
		}
		var e IndexValues
		if e.Name, err = d.DecodeString(); err != nil {
			return nil, err
		}
		nv, err := d.DecodeArrayLen()
		if err != nil {
			return nil, err
		}
		e.Values = make([]string, max(nv, 0))
		for j := range e.Values {
			if e.Values[j], err = d.DecodeString(); err != nil {
				return nil, err
			}
		}
		r.Index = append(r.Index, e)
	}
	if br.Len() != 0 {
		return nil, fmt.Errorf("%d bytes after", br.Len())
	}
	return r, nil
}

// randomRecord makes a record whose strings and lists cross every msgpack
// length boundary the envelope uses (up to 256 bytes unless big).
func randomRecord(rng *rand.Rand, version uint8, big bool) *Record {
	lengths := []int{0, 1, 31, 32, 255, 256}
	if big {
		lengths = append(lengths, 65535, 65536)
	}
	str := func() string {
		n := lengths[rng.IntN(len(lengths))]
		if rng.IntN(4) > 0 {
			n = rng.IntN(40)
		}
		return strings.Repeat(string(rune('a'+rng.IntN(26))), n)
	}
	r := &Record{RV: str(), UID: str(), Codec: Codec(1 + rng.IntN(3)), APIVersion: str(), Kind: str(), KeyID: str()}
	if version >= 3 {
		r.Compression = Compression(rng.IntN(2))
	}
	// An empty payload reads back as nil, as it always has.
	if n := lengths[rng.IntN(len(lengths))]; n > 0 && rng.IntN(3) > 0 {
		r.Payload = make([]byte, n)
		for i := range r.Payload {
			r.Payload[i] = byte(rng.Uint32())
		}
	}
	for i := range rng.IntN(4) {
		e := IndexValues{Name: fmt.Sprint("index-", i), Values: []string{}}
		nv := rng.IntN(3)
		if rng.IntN(10) == 0 {
			nv = 17 // array16
		}
		for range nv {
			e.Values = append(e.Values, str())
		}
		r.Index = append(r.Index, e)
	}
	return r
}

// TestEnvelopeIsTheLibrarysMsgpack: the hand-written encoder writes the
// bytes the msgpack library writes, for both envelope versions and every
// length class, and the parser reads them back as they were.
func TestEnvelopeIsTheLibrarysMsgpack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		for _, version := range []uint8{2, 3} {
			r := randomRecord(rng, version, true)
			key := []byte(fmt.Sprint("ns/obj-", i))
			got, err := EncodeRecordVersion(key, r, version)
			if err != nil {
				t.Fatal(err)
			}
			body := got[:len(got)-crcSize]
			if want := libEncode(t, r, version); !bytes.Equal(body, want) {
				t.Fatalf("record %d v%d: hand-written envelope differs from the library's", i, version)
			}
			back, err := DecodeRecordVersion(key, got, version)
			if err != nil {
				t.Fatalf("record %d v%d: %v", i, version, err)
			}
			if !reflect.DeepEqual(back, r) {
				t.Fatalf("record %d v%d: round trip\n got %+v\nwant %+v", i, version, back, r)
			}
		}
	}
}

// TestEnvelopeVersionsAreNotInterchangeable: a v3 record never reads as v2
// (a v2 build would refuse the file anyway: its schema is newer), nor a v2
// record as v3, and v2 cannot hold a compressed payload.
func TestEnvelopeVersionsAreNotInterchangeable(t *testing.T) {
	key := []byte("ns/p")
	r := &Record{RV: "1", Codec: CodecProtobuf, Compression: CompressionS2, Payload: []byte("x")}
	v3, err := EncodeRecord(key, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeRecordVersion(key, v3, 2); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("v3 record read as v2: %v", err)
	}
	if _, err := EncodeRecordVersion(key, r, 2); err == nil {
		t.Fatal("v2 envelope took a compressed payload")
	}
	r.Compression = CompressionNone
	v2, err := EncodeRecordVersion(key, r, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeRecord(key, v2); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("v2 record read as v3: %v", err)
	}
	if _, err := EncodeRecordVersion(key, r, 4); err == nil {
		t.Fatal("encoded an unknown envelope version")
	}
}

// TestCompressPayload: a compressible payload is stored as S2 and comes
// back exactly; a short or incompressible one is stored as it is; damage
// and oversized lengths are ErrCorruptRecord.
func TestCompressPayload(t *testing.T) {
	plain := []byte(strings.Repeat("metadata: labels: app=web tier=frontend; ", 100))
	c, packed := CompressPayload(plain)
	if c != CompressionS2 || len(packed) >= len(plain)/2 {
		t.Fatalf("compression %s, %d of %d bytes", c, len(packed), len(plain))
	}
	back, err := DecompressPayload(c, packed, make([]byte, 0, 10))
	if err != nil || !bytes.Equal(back, plain) {
		t.Fatalf("round trip: %v", err)
	}
	if c, p := CompressPayload([]byte("short")); c != CompressionNone || string(p) != "short" {
		t.Fatalf("short payload: %s %q", c, p)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	if c, p := CompressPayload(noise); c != CompressionNone || !bytes.Equal(p, noise) {
		t.Fatalf("incompressible payload: %s", c)
	}
	for name, bad := range map[string][]byte{
		"truncated":   packed[:len(packed)/2],
		"garbage":     noise[:100],
		"huge length": binary.AppendUvarint(nil, MaxPayload+1),
	} {
		if _, err := DecompressPayload(CompressionS2, bad, nil); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%s: want ErrCorruptRecord, got %v", name, err)
		}
	}
	if _, err := DecompressPayload(Compression(9), packed, nil); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("unknown compression: %v", err)
	}
}

// FuzzRecordEnvelope feeds envelope bodies with a valid checksum, so the
// parser itself is exercised: it never panics; what it accepts the msgpack
// library reads as the same record; and what it accepts re-encodes to an
// envelope it reads the same way.
func FuzzRecordEnvelope(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 8 {
		for _, version := range []uint8{2, 3} {
			enc, err := EncodeRecordVersion([]byte("k"), randomRecord(rng, version, false), version)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(enc[:len(enc)-crcSize])
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0x9a, 0x03})
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		key := []byte("ns/p")
		data := binary.BigEndian.AppendUint32(bytes.Clone(body), recordCRC(key, body))
		for _, version := range []uint8{2, 3} {
			r, err := DecodeRecordVersion(key, data, version)
			if err != nil {
				if !errors.Is(err, ErrCorruptRecord) {
					t.Fatalf("v%d: error does not wrap ErrCorruptRecord: %v", version, err)
				}
				continue
			}
			want, err := libDecode(body, version)
			if err != nil {
				t.Fatalf("v%d: parser accepts what the library refuses (%v)", version, err)
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("v%d: parser %+v, library %+v", version, r, want)
			}
			again, err := EncodeRecordVersion(key, r, version)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := DecodeRecordVersion(key, again, version)
			if err != nil || !reflect.DeepEqual(r2, r) {
				t.Fatalf("v%d: re-encoded record reads back as %+v, %v", version, r2, err)
			}
		}
	})
}

// AppendRecord appends exactly what EncodeRecord gives, whatever dst
// holds: the checksum covers the key and the new envelope only.
func TestAppendRecordAppendsTheEncoding(t *testing.T) {
	r := &Record{RV: "42", UID: "u-1", Codec: 1, APIVersion: "v1", Kind: "Pod", Payload: bytes.Repeat([]byte("p"), 300),
		Index: []IndexValues{{Name: "namespace", Values: []string{"ns"}}}}
	key := []byte("ns/pod")
	want, err := EncodeRecord(key, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, dst := range [][]byte{nil, {}, []byte("already here"), make([]byte, 0, 4096)} {
		prefix := bytes.Clone(dst)
		got, err := AppendRecord(dst, key, r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("AppendRecord(%q) = %q, want %q then %q", prefix, got, prefix, want)
		}
		if _, err := DecodeRecord(key, got[len(prefix):]); err != nil {
			t.Fatalf("the appended record does not decode: %v", err)
		}
	}
}
