package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/boltinformer/boltinformer/migrations"
)

// migrateOptions are the flags of cachectl migrate.
type migrateOptions struct {
	lock   sourceOptions
	dryRun bool
	target string
}

// AddFlags adds migrate's flags.
func (o *migrateOptions) AddFlags(fs *pflag.FlagSet) {
	o.lock.AddFlags(fs)
	fs.BoolVar(&o.dryRun, "dry-run", false, "Print the steps and check that they can read the file, without writing")
	fs.StringVar(&o.target, "to-version", "", "Schema version to end at, as info prints it (v1) or as a number (default: the newest this cachectl knows; lower runs the reverts)")
}

func newMigrateCommand(e *env) *cobra.Command {
	o := &migrateOptions{lock: newSourceOptions(false)}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring a cache file to this build's schema version",
		Long: `Run the steps that take a cache file from its schema version to the newest
this cachectl knows (or to --to-version), one step at a time. Each step runs
in one transaction or rewrites the file and renames the copy over it, so a
crash leaves a complete file at the version of the last completed step.

The file must not be in use: migrate takes its exclusive lock (a dry run a
shared one) and fails within --timeout if a process holds it.

Ctrl-C (SIGINT) or SIGTERM stops it before the next step or between two
transactions of a rewrite: the file stays complete at the version of the
last finished step, the partial copy is removed, and the exit code is 130.`,
		Example: `  cachectl migrate --db cache.db --dry-run
  cachectl migrate --db cache.db`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.lock.Validate(cmd); err != nil {
				return err
			}
			opts := migrations.Options{LockTimeout: o.lock.timeout}
			if o.target != "" {
				// "v0" as info prints it, or "0".
				v, err := strconv.ParseUint(strings.TrimPrefix(o.target, "v"), 10, 64)
				if err != nil {
					return usageErrorf(cmd, "--to-version %q is not a schema version", o.target)
				}
				opts.Target = &v
			}
			return o.run(cmd.Context(), e, opts)
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("db").Usage = "Path of the cache file to migrate"
	return cmd
}

func (o *migrateOptions) run(ctx context.Context, e *env, opts migrations.Options) error {
	path := o.lock.db
	if _, err := os.Stat(path); err != nil {
		return o.lock.openError(err)
	}
	if o.dryRun {
		rep, err := migrations.Plan(path, opts)
		if err != nil {
			return o.lock.openError(err)
		}
		fmt.Fprintf(e.streams.Out, "%s\n(dry run: nothing was written)\n", rep)
		return nil
	}
	prog := e.newProgress("migrating "+path, 0, false)
	stop := prog.tick()
	rep, err := migrations.MigrateContext(ctx, path, opts)
	stop()
	prog.finish()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return newError(errInterrupted, "migrate interrupted: %s is complete at schema v%d (the last finished step) and the partial copy was removed", path, rep.To)
		}
		return o.lock.openError(err)
	}
	fmt.Fprintf(e.streams.Out, "%s\n", rep)
	return nil
}
