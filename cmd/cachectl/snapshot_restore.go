package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/snapshot"
)

// snapshotRestoreOptions are the flags of cachectl snapshot restore.
type snapshotRestoreOptions struct {
	lock           sourceOptions
	force          bool
	followSymlinks bool
}

// AddFlags adds snapshot restore's flags.
func (o *snapshotRestoreOptions) AddFlags(fs *pflag.FlagSet) {
	o.lock.AddFlags(fs)
	fs.BoolVar(&o.force, "force", false, "Replace an existing --db file (never one a process holds)")
	fs.BoolVar(&o.followSymlinks, "follow-symlinks", false, "Restore to the file a symbolic link --db points to (refused otherwise)")
}

func newSnapshotRestoreCommand(e *env) *cobra.Command {
	o := &snapshotRestoreOptions{lock: newSourceOptions(false)}
	cmd := &cobra.Command{
		Use:   "restore FILE --db PATH",
		Short: "Restore the cache file held by snapshot FILE to --db PATH",
		Long: `Restore the cache file a snapshot holds to --db PATH. The snapshot's checksum
is verified and the restored file is checked (bbolt's structure,
boltinformer's invariants, the stores' resourceVersions and object counts
against the header) before it is renamed into place, so PATH holds its old
content or the whole restored file. An existing PATH needs --force, and a
file a process holds is never replaced. A PATH that is a symbolic link is
refused unless --follow-symlinks: the link's target is what gets replaced.`,
		Example: `  cachectl snapshot restore backup.snap --db /var/lib/agent/cache.db
  cachectl snapshot restore backup.snap --db cache.db --force`,
		Args: exactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.lock.Validate(cmd); err != nil {
				return err
			}
			return o.run(e, args[0])
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("db").Usage = "Path of the cache file to write"
	return cmd
}

func (o *snapshotRestoreOptions) run(e *env, file string) error {
	if _, err := os.Stat(file); err != nil {
		return snapshotError(file, err)
	}
	if err := refuseSymlink(o.lock.db, o.followSymlinks); err != nil {
		return err
	}
	prog := e.newProgress("restoring "+file+" to "+o.lock.db, 0, false)
	stop := prog.tick()
	h, err := snapshot.Restore(file, o.lock.db, snapshot.RestoreOptions{Force: o.force, LockTimeout: o.lock.timeout})
	stop()
	prog.finish()
	if err != nil {
		if errors.Is(err, cachefile.ErrExists) {
			return newError(cachefile.ErrExists, "%s exists (use --force to replace it)", o.lock.db)
		}
		if errors.Is(err, cachefile.ErrLocked) {
			return newError(cachefile.ErrLocked, "%s is in use by another process (waited %s); stop it before restoring over its file", o.lock.db, o.lock.timeout)
		}
		return snapshotError(file, err)
	}
	fmt.Fprintf(e.streams.Out, "Restored %s to %s: schema v%d, %d store(s), %d object(s), taken at %s\n",
		file, o.lock.db, h.SchemaVersion, len(h.Stores), totalObjects(h), h.TakenAt.UTC().Format("2006-01-02T15:04:05Z"))
	for _, s := range h.Stores {
		fmt.Fprintf(e.streams.Out, "  %s: %d object(s) at resourceVersion %s\n", s.Name, s.Objects, orNone(s.RV))
	}
	return nil
}
