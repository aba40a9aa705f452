package boltindexer

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// BenchmarkDecodeEnvelope compares the field-by-field envelope decoder with
// msgpack's reflective decoding of the same record.
func BenchmarkDecodeEnvelope(b *testing.B) {
	data := seedRecord(b)
	b.Run("fields", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeRecord(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reflect", func(b *testing.B) {
		for b.Loop() {
			var r record
			if err := msgpack.Unmarshal(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestEnvelopeDecodersAgree: the field decoder reads exactly what msgpack
// encodes, index values included.
func TestEnvelopeDecodersAgree(t *testing.T) {
	data := seedRecord(t)
	got, err := decodeRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	var want record
	if err := msgpack.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if got.RV != want.RV || got.UID != want.UID || got.Codec != want.Codec || string(got.Payload) != string(want.Payload) ||
		len(got.Index) != len(want.Index) || got.Index[0].Name != want.Index[0].Name || got.Index[0].Values[0] != want.Index[0].Values[0] {
		t.Fatalf("field decoder %+v, msgpack %+v", got, want)
	}
}
