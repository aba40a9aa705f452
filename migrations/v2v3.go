package migrations

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// Schema v3 adds to every record envelope the compression of its payload,
// and compresses payloads with S2 (see cachefile). A v2 build cannot read
// a compressed payload, so it must never see one: it refuses a v3 file as
// newer than it supports.
var stepV2V3 = step{
	from: 2, to: 3,
	up: change{
		description: "rewrite every record in the v3 envelope (with its payload's compression); " +
			"compress plaintext payloads with S2 (sealed payloads stay as they are)",
		rewrite: upV2V3,
	},
	down: &change{
		description: "rewrite every record in the v2 envelope with its payload decompressed " +
			"(refused if an encrypted record is compressed: its payload cannot be decompressed without its key)",
		rewrite: downV2V3,
	},
}

func upV2V3(src *bolt.Tx, dst *bolt.DB, e *env) error {
	return rewriteStores(src, dst, e, 3, stateless(func(_, key, v []byte) ([]byte, error) {
		rec, err := cachefile.DecodeRecordVersion(key, v, 2)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrLayout, err)
		}
		if rec.KeyID == "" {
			rec.Compression, rec.Payload = cachefile.CompressPayload(rec.Payload)
		}
		return cachefile.EncodeRecordVersion(key, rec, 3)
	}), copyState)
}

func downV2V3(src *bolt.Tx, dst *bolt.DB, e *env) error {
	return rewriteStores(src, dst, e, 2, func() recordFunc {
		var buf []byte // this goroutine's decompression buffer
		return func(store, key, v []byte) ([]byte, error) {
			rec, err := cachefile.DecodeRecordVersion(key, v, 3)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrLayout, err)
			}
			if rec.Compression != cachefile.CompressionNone {
				if rec.KeyID != "" {
					return nil, fmt.Errorf("%w: store %s key %q is encrypted with key %q and its payload is compressed, which schema v2 cannot hold (rewrite it in plaintext first)",
						ErrIrreversible, store, key, rec.KeyID)
				}
				if buf, err = cachefile.DecompressPayload(rec.Compression, rec.Payload, buf); err != nil {
					return nil, fmt.Errorf("%w: %w", ErrLayout, err)
				}
				rec.Compression, rec.Payload = cachefile.CompressionNone, buf
			}
			return cachefile.EncodeRecordVersion(key, rec, 2)
		}
	}, copyStateV2)
}

// copyState copies a store's state as it is: v3 has v2's state keys.
func copyState(state *bolt.Bucket, _ int, put func(k, v []byte) error) error {
	return state.ForEach(func(k, v []byte) error {
		if v == nil {
			return nil
		}
		return put(k, v)
	})
}

// copyStateV2 copies a v3 store's state without the keys v3 added (used-at).
func copyStateV2(state *bolt.Bucket, count int, put func(k, v []byte) error) error {
	return copyState(state, count, func(k, v []byte) error {
		if bytes.Equal(k, cachefile.StateUsedAt) {
			return nil
		}
		return put(k, v)
	})
}
