package migrations

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// recordV1Version is the first field of every schema v1 record.
const recordV1Version = 1

// recordV1 is the record envelope of schema v1, frozen here as boltindexer
// wrote it when v1 was current: steps to and from v1 must keep producing
// and reading exactly this, whatever later builds write. Codec numbers are
// those of boltindexer.CodecID.
type recordV1 struct {
	_msgpack struct{} `msgpack:",as_array"`

	Version    uint8
	RV         string
	UID        string
	Codec      uint8
	APIVersion string
	Kind       string
	Payload    []byte
	// Index lists, per index name in name order, the sorted distinct
	// values the record is indexed under (an empty list, not a missing
	// entry, when it has none).
	Index []indexEntryV1
}

type indexEntryV1 struct {
	_msgpack struct{} `msgpack:",as_array"`

	Name   string
	Values []string
}

func encodeRecordV1(r *recordV1) ([]byte, error) {
	b, err := msgpack.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode v1 record: %w", err)
	}
	return b, nil
}

func decodeRecordV1(data []byte) (*recordV1, error) {
	r := &recordV1{}
	if err := msgpack.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%w: v1 record: %v", ErrLayout, err)
	}
	if r.Version != recordV1Version {
		return nil, fmt.Errorf("%w: v1 record version %d", ErrLayout, r.Version)
	}
	return r, nil
}
