package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// DefaultRekeyBatch is how many records one rekey transaction rewrites.
const DefaultRekeyBatch = 256

// RekeyOptions configure Rekey.
type RekeyOptions struct {
	// Keys must hold every key a record is sealed with; its current key
	// seals. Required.
	Keys *encryption.Keyring
	// EncryptAll seals the plaintext records of every store; otherwise
	// only those of stores encryption.SealedByDefault names (Secrets).
	// Records already sealed are moved to the current key in any store.
	EncryptAll bool
	// BatchSize bounds the records rewritten per transaction
	// (DefaultRekeyBatch if zero), so a large store never holds the
	// commit loop for long.
	BatchSize int
	// Progress, when set, is called after each committed batch.
	Progress func(store string, rewritten int)
}

// RekeyStats counts what Rekey did to one store.
type RekeyStats struct {
	// Sealed were plaintext and are now sealed with the current key.
	Sealed int
	// Resealed were sealed with an older key and now are with the current one.
	Resealed int
	// Current were already sealed with the current key, or stay plaintext.
	Unchanged int
}

// Rekey rewrites, in every store of db, each record whose payload is not
// sealed with opts.Keys' current key (see RekeyOptions.EncryptAll for
// plaintext ones), through the commit loop in batches of BatchSize. Only
// payloads change: resourceVersions, index values, index entries and the
// stored RV stay as they were, so no informer relists. A record sealed
// with a key opts.Keys lacks stops it with an error naming that key;
// batches committed before stay committed and a rerun continues.
//
// Pages that held the old payloads are freed, not wiped: compact the file
// afterwards (cachectl compact) to drop them.
func Rekey(ctx context.Context, db *cachefile.DB, opts RekeyOptions) (map[string]RekeyStats, error) {
	if opts.Keys == nil {
		return nil, ErrNoKeys
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultRekeyBatch
	}
	var names []string
	err := db.View(func(tx *bolt.Tx) error {
		return cachefile.ForEachStoreTx(tx, func(name string, _ *cachefile.Buckets, err error) error {
			if err != nil {
				return err
			}
			names = append(names, name)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("rekey %s: %w", db.Path(), err)
	}
	out := map[string]RekeyStats{}
	for _, name := range names {
		st, err := rekeyStore(ctx, db, name, opts)
		out[name] = st
		if err != nil {
			return out, fmt.Errorf("rekey %s store %s: %w", db.Path(), name, err)
		}
	}
	return out, nil
}

func rekeyStore(ctx context.Context, db *cachefile.DB, name string, opts RekeyOptions) (RekeyStats, error) {
	var st RekeyStats
	current := opts.Keys.Current()
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		var batch RekeyStats
		var last []byte
		done := false
		err := db.Update(&cachefile.Write{Fn: func(tx *bolt.Tx) error {
			batch, last, done = RekeyStats{}, nil, false
			b, err := cachefile.StoreTx(tx, name)
			if err != nil {
				return err
			}
			seal := opts.EncryptAll
			if !seal {
				id, err := cachefile.ReadIdentityTx(b)
				if err != nil {
					return err
				}
				seal = id != nil && encryption.SealedByDefault(id.Group, id.Resource, id.Kind)
			}
			type put struct{ key, enc []byte }
			var puts []put
			// Walk, then write: writing while a cursor walks a bucket is not safe in bbolt.
			c := b.Objects.Cursor()
			k, v := seekAfter(c, after)
			// Records left as they are cost a decode each: bound them too.
			for scanned := 0; k != nil && len(puts) < opts.BatchSize && scanned < 16*opts.BatchSize; k, v = c.Next() {
				scanned++
				last = k
				rec, err := cachefile.DecodeRecord(k, v)
				if err != nil {
					return fmt.Errorf("key %q: %w", k, err)
				}
				if rec.KeyID == current || (rec.KeyID == "" && !seal) {
					batch.Unchanged++
					continue
				}
				plain := rec.Payload
				if rec.KeyID != "" {
					if plain, err = opts.Keys.Open(rec.KeyID, name, string(k), rec.Payload); err != nil {
						return fmt.Errorf("%w: %w", ErrEncrypted, err)
					}
					batch.Resealed++
				} else {
					batch.Sealed++
				}
				if rec.KeyID, rec.Payload, err = opts.Keys.Seal(name, string(k), plain); err != nil {
					return err
				}
				enc, err := cachefile.EncodeRecord(k, rec)
				if err != nil {
					return err
				}
				puts = append(puts, put{bytes.Clone(k), enc})
			}
			done = k == nil
			last = bytes.Clone(last)
			for _, p := range puts {
				if err := b.PutRecord(p.key, p.enc, true); err != nil {
					return err
				}
			}
			return nil
		}})
		if errors.Is(err, cachefile.ErrNoStore) {
			return st, nil // dropped since the list was taken
		}
		if err != nil {
			return st, err
		}
		st.Sealed += batch.Sealed
		st.Resealed += batch.Resealed
		st.Unchanged += batch.Unchanged
		if opts.Progress != nil {
			opts.Progress(name, st.Sealed+st.Resealed)
		}
		if done {
			return st, nil
		}
		after = last
	}
}
