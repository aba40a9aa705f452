package boltindexer

import (
	"bytes"
	"fmt"
	"io"
	"sort"

	"github.com/vmihailenco/msgpack/v5"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// recordVersion is the envelope layout written by this build.
const recordVersion = 1

// record is the envelope stored for each object: enough to compare
// resourceVersions and maintain indexes without decoding the payload.
//
// It is encoded as a msgpack array whose decoder expects exactly these
// fields: any change to the layout needs a new recordVersion and a
// migration step (package migrations).
type record struct {
	_msgpack struct{} `msgpack:",as_array"`

	Version    uint8
	RV         string
	UID        string
	Codec      CodecID
	APIVersion string
	Kind       string
	Payload    []byte
	// Index holds, per index name, the values the record was indexed
	// under when it was written (sorted, deduplicated), so that an update
	// or delete removes exactly those entries without running IndexFuncs
	// on the old object.
	Index []indexEntry
}

type indexEntry struct {
	_msgpack struct{} `msgpack:",as_array"`

	Name   string
	Values []string
}

func (r *record) values(index string) []string {
	for i := range r.Index {
		if r.Index[i].Name == index {
			return r.Index[i].Values
		}
	}
	return nil
}

// setValues replaces the values of one index (nil removes the index).
func (r *record) setValues(index string, values []string) {
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
		r.Index = append(r.Index, indexEntry{Name: index, Values: values})
		sort.Slice(r.Index, func(a, b int) bool { return r.Index[a].Name < r.Index[b].Name })
	}
}

func encodeRecord(r *record) ([]byte, error) {
	b, err := msgpack.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return b, nil
}

// recordFields is the number of fields of the envelope array.
const recordFields = 8

// decodeRecord parses an envelope field by field (the layout is fixed by
// recordVersion), without reflection. Strings are copied; Payload aliases
// data, which may be bbolt memory valid only in its transaction: callers
// decode or copy the payload before the transaction ends.
func decodeRecord(data []byte) (*record, error) {
	r := &record{}
	if err := r.decode(data); err != nil {
		return nil, fmt.Errorf("%w: envelope: %v", ErrCorruptRecord, err)
	}
	if r.Version != recordVersion {
		return nil, fmt.Errorf("%w: envelope version %d, want %d", ErrCorruptRecord, r.Version, recordVersion)
	}
	switch r.Codec {
	case CodecProtobuf, CodecJSON, CodecUnstructuredJSON:
	default:
		return nil, fmt.Errorf("%w: unknown codec %d", ErrCorruptRecord, r.Codec)
	}
	return r, nil
}

func (r *record) decode(data []byte) error {
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
	if r.Version, err = d.DecodeUint8(); err != nil {
		return err
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
	r.Codec = CodecID(codec)
	if r.APIVersion, err = d.DecodeString(); err != nil {
		return err
	}
	if r.Kind, err = d.DecodeString(); err != nil {
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
	for i := 0; i < entries; i++ {
		if m, err := d.DecodeArrayLen(); err != nil || m != 2 {
			return fmt.Errorf("index entry %d: %d fields, %v", i, m, err)
		}
		var e indexEntry
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
	return nil
}

// newRecord builds the envelope for obj; index values are filled by the caller.
func newRecord(c *objectCodec, obj interface{}) (*record, error) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("%w: %T is not a runtime.Object", ErrWrongType, obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: %T: %v", ErrNoMetadata, obj, err)
	}
	id, payload, err := c.encode(ro)
	if err != nil {
		return nil, err
	}
	var apiVersion, kind string
	if t, err := meta.TypeAccessor(obj); err == nil {
		apiVersion, kind = t.GetAPIVersion(), t.GetKind()
	}
	return &record{
		Version:    recordVersion,
		RV:         m.GetResourceVersion(),
		UID:        string(m.GetUID()),
		Codec:      id,
		APIVersion: apiVersion,
		Kind:       kind,
		Payload:    payload,
	}, nil
}
