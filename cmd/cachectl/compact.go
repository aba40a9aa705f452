package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/migrations"
)

// compactOptions are the flags of cachectl compact.
type compactOptions struct {
	lock      sourceOptions
	to        string
	force     bool
	txMaxSize int64
}

// AddFlags adds compact's flags.
func (o *compactOptions) AddFlags(fs *pflag.FlagSet) {
	o.lock.AddFlags(fs)
	fs.StringVar(&o.to, "to", "", "Write the compacted copy here and leave --db as it is (default: replace --db)")
	fs.BoolVar(&o.force, "force", false, "Replace an existing --to file")
	fs.Int64Var(&o.txMaxSize, "tx-max-size", migrations.DefaultTxMaxSize, "Bytes copied per transaction (as bbolt compact's flag); Ctrl-C takes effect between transactions")
}

func newCompactCommand(e *env) *cobra.Command {
	o := &compactOptions{lock: newSourceOptions(false)}
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Rewrite a cache file without its free pages",
		Long: `Copy a cache file into a new one without its free pages (bbolt's compaction),
check the copy, and rename it over the original, or write it to --to and
leave the original alone. The rename is the only change to the destination:
after a crash it is the old file or the whole compacted one.

The file must not be in use: compact takes its exclusive lock and fails
within --timeout if a process holds it.

Ctrl-C (SIGINT) or SIGTERM stops it between two transactions of the copy:
the partial copy is removed, the file is left as it was, and the exit code
is 130.`,
		Example: `  # Compact in place (stop the process that uses the file first)
  cachectl compact --db cache.db

  # Write a compacted copy
  cachectl compact --db cache.db --to cache-compact.db`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.lock.Validate(cmd); err != nil {
				return err
			}
			if o.txMaxSize <= 0 {
				return usageErrorf(cmd, "--tx-max-size must be positive, got %d", o.txMaxSize)
			}
			return o.run(cmd.Context(), e)
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("db").Usage = "Path of the cache file to compact"
	return cmd
}

func (o *compactOptions) run(ctx context.Context, e *env) error {
	src := o.lock.db
	if _, err := os.Stat(src); err != nil {
		return o.lock.openError(err)
	}
	prog := e.newProgress("compacting "+src, 0, false)
	stop := prog.tick()
	rep, err := migrations.CompactContext(ctx, src, o.to, migrations.CompactOptions{LockTimeout: o.lock.timeout, Force: o.force, TxMaxSize: o.txMaxSize})
	stop()
	prog.finish()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return newError(errInterrupted, "compact interrupted: %s is unchanged and the partial copy was removed", rep.Dst)
		}
		if errors.Is(err, cachefile.ErrExists) {
			return newError(cachefile.ErrExists, "%s exists (use --force to replace it)", o.to)
		}
		return o.lock.openError(err)
	}
	change := ""
	if rep.SizeBefore > 0 {
		change = fmt.Sprintf(" (%+d%%)", (rep.SizeAfter-rep.SizeBefore)*100/rep.SizeBefore)
	}
	fmt.Fprintf(e.streams.Out, "compacted %s to %s: %s → %s%s in %s\n", rep.Src, rep.Dst,
		humanBytes(rep.SizeBefore), humanBytes(rep.SizeAfter), change, rep.Duration.Round(1e6))
	return nil
}
