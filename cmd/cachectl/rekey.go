package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

func init() { subcommands = append(subcommands, newRekeyCommand) }

// rekeyOptions are the flags of cachectl rekey.
type rekeyOptions struct {
	lock  sourceOptions
	all   bool
	batch int
}

// AddFlags adds rekey's flags.
func (o *rekeyOptions) AddFlags(fs *pflag.FlagSet) {
	o.lock.AddFlags(fs)
	fs.BoolVar(&o.all, "all-resources", false, "Seal the plaintext records of every store, not only Secrets")
	fs.IntVar(&o.batch, "batch", boltstore.DefaultRekeyBatch, "Records rewritten per transaction")
}

func newRekeyCommand(e *env) *cobra.Command {
	o := &rekeyOptions{lock: newSourceOptions(false)}
	cmd := &cobra.Command{
		Use:   "rekey",
		Short: "Seal every record's payload with the current encryption key",
		Long: `Rewrite, in place, every record whose payload is not sealed with the first key
of --encryption-key-file: records sealed with an older key listed in the file
are moved to the first key, and plaintext records of Secret stores (of every
store with --all-resources) are sealed. Only payloads change: resourceVersions
and index entries stay, so no informer relists. Batches of --batch records
commit one by one; an interrupted rekey leaves a file that reads with the same
key file, and a rerun finishes it.

The file must not be in use: rekey takes its exclusive lock and fails within
--timeout if a process holds it. The pages that held the old payloads are
freed, not wiped: run cachectl compact afterwards so that no old plaintext or
ciphertext stays in the file.`,
		Example: `  # Rotate: put the new key first in keys.yaml, then
  cachectl rekey --db cache.db --encryption-key-file keys.yaml
  cachectl compact --db cache.db`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.lock.Validate(cmd); err != nil {
				return err
			}
			if o.lock.keyFile == "" {
				return usageErrorf(cmd, "--encryption-key-file is required")
			}
			if o.batch <= 0 {
				return usageErrorf(cmd, "--batch must be positive, got %d", o.batch)
			}
			return o.run(cmd.Context(), e)
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("db").Usage = "Path of the cache file to rekey"
	cmd.Flags().Lookup("encryption-key-file").Usage = "Key file: its first key seals, and every key a record is sealed with must be listed"
	return cmd
}

// keys loads --encryption-key-file (nil when it is not given).
func (o *sourceOptions) keys() (*encryption.Keyring, error) {
	if o.keyFile == "" {
		return nil, nil
	}
	k, err := encryption.LoadFile(o.keyFile)
	if err != nil {
		return nil, newError(encryption.ErrKeyFile, "--encryption-key-file: %v", err)
	}
	return k, nil
}

func (o *rekeyOptions) run(ctx context.Context, e *env) error {
	keys, err := o.lock.keys()
	if err != nil {
		return err
	}
	if _, err := os.Stat(o.lock.db); err != nil {
		return o.lock.openError(err)
	}
	db, err := cachefile.Open(o.lock.db, cachefile.Options{LockTimeout: o.lock.timeout})
	if err != nil {
		return o.lock.openError(err)
	}
	prog := e.newProgress("rekeying "+o.lock.db, 0, false)
	stats, err := boltstore.Rekey(ctx, db, boltstore.RekeyOptions{
		Keys: keys, EncryptAll: o.all, BatchSize: o.batch,
		Progress: func(store string, n int) { prog.setLabel(fmt.Sprintf("rekeying %s: %d", store, n), 0) },
	})
	prog.finish()
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	names := make([]string, 0, len(stats))
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := stats[n]
		fmt.Fprintf(e.streams.Out, "store %s: %d sealed, %d moved to key %s, %d unchanged\n", n, st.Sealed, st.Resealed, keys.Current(), st.Unchanged)
	}
	return err
}
