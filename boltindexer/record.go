package boltindexer

import (
	"fmt"
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

// decodeRecord parses an envelope. data may alias bbolt memory; the result
// does not (msgpack copies strings and byte slices).
func decodeRecord(data []byte) (*record, error) {
	r := &record{}
	if err := msgpack.Unmarshal(data, r); err != nil {
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
