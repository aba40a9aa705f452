package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/boltinformer/boltinformer/snapshot"
)

// snapshotSaveOptions are the flags of cachectl snapshot save.
type snapshotSaveOptions struct {
	source sourceOptions
	force  bool
}

// AddFlags adds snapshot save's flags.
func (o *snapshotSaveOptions) AddFlags(fs *pflag.FlagSet) {
	o.source.AddFlags(fs)
	fs.BoolVar(&o.force, "force", false, "Replace an existing FILE")
}

func newSnapshotSaveCommand(e *env) *cobra.Command {
	o := &snapshotSaveOptions{source: newSourceOptions(true)}
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Save a consistent snapshot of a cache file to FILE",
		Long: `Save a snapshot of a cache file to FILE (mode 0600: it holds the whole cache,
Secrets included). The copy is consistent: it holds exactly the commits
before its read transaction began, while the owner keeps writing. FILE is
written through a temporary file and renamed, so it never holds part of a
snapshot; an existing FILE needs --force. The saved file is verified (its
SHA-256) before the command reports success. FILE "-" writes the snapshot
to standard output (the summary goes to standard error).`,
		Example: `  # From the process that owns the file
  cachectl snapshot save backup.snap --socket /run/agent.sock

  # From a file no process holds
  cachectl snapshot save backup.snap --db cache.db

  # Stream it elsewhere
  cachectl snapshot save - --socket /run/agent.sock | ssh backup 'cat > agent.snap'`,
		Args: exactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.source.Validate(cmd); err != nil {
				return err
			}
			return o.run(cmd.Context(), e, args[0])
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func (o *snapshotSaveOptions) run(ctx context.Context, e *env, path string) error {
	r, err := o.source.open(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	if path == "-" {
		return o.source.socketError(saveToStdout(ctx, e, r))
	}
	if err := refuseExisting(path, o.force); err != nil {
		return err
	}
	info, err := r.Info(ctx)
	if err != nil {
		return o.source.socketError(err)
	}
	// The file's size bounds the copy's: a good enough total for progress.
	prog := e.newProgress("saving snapshot to "+path, info.Size, true)
	err = writeFileAtomically(path, func(w io.Writer) error {
		_, err := r.Snapshot(ctx, io.MultiWriter(w, prog))
		return err
	})
	prog.finish()
	if err != nil {
		return fmt.Errorf("save snapshot to %s: %w", path, err)
	}
	rep, err := snapshot.Status(path)
	if err != nil {
		return fmt.Errorf("verify snapshot %s: %w", path, err)
	}
	if !rep.ChecksumValid {
		return fmt.Errorf("verify snapshot %s: %w", path, snapshot.ErrChecksum)
	}
	h := rep.Header
	fmt.Fprintf(e.streams.Out, "Snapshot saved at %s: %s, schema v%d, %d store(s), %d object(s), sha256 %s\n",
		path, humanBytes(rep.Size), h.SchemaVersion, len(h.Stores), totalObjects(h), rep.Checksum)
	return nil
}
