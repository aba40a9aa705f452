package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

func init() { subcommands = append(subcommands, newPruneCommand) }

// pruneOptions are the flags of cachectl prune.
type pruneOptions struct {
	lock      sourceOptions
	unusedFor time.Duration
	stores    []string
	dryRun    bool
}

// AddFlags adds prune's flags.
func (o *pruneOptions) AddFlags(fs *pflag.FlagSet) {
	o.lock.AddFlags(fs)
	fs.DurationVar(&o.unusedFor, "unused-for", 0, "Drop the stores no program has written or opened for longer than this (720h: 30 days)")
	fs.StringSliceVar(&o.stores, "store", nil, "Drop these stores, whatever their use (comma-separated or repeated; names as cachectl info prints them)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "Print what would be dropped, without writing")
}

func newPruneCommand(e *env) *cobra.Command {
	o := &pruneOptions{lock: newSourceOptions(false)}
	cmd := &cobra.Command{
		Use:   "prune --unused-for DURATION | --store NAME[,NAME…]",
		Short: "Drop the stores of a cache file that no program uses any more",
		Long: `Drop stores from a cache file: those no program has used for longer than
--unused-for, and those named with --store. A new version of a program that
changes a store's name, namespace or selectors leaves the old store behind,
and it stays in the file until it is dropped.

A store is in use while a program writes it (every commit, bookmarks
included) and whenever a program opens it for writing; cachectl info shows
its last write. A program that opens a dropped store again relists it.

The file must not be in use: prune takes its exclusive lock (a dry run a
shared one) and fails within --timeout if a process holds it, so it never
drops a store a running program uses. The space the stores held is reused by
later writes; cachectl compact returns it to the filesystem.`,
		Example: `  # What would go: stores unused for 30 days
  cachectl prune --db cache.db --unused-for 720h --dry-run

  # Drop them, and one store by name
  cachectl prune --db cache.db --unused-for 720h --store Pod.v1-old`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(cmd); err != nil {
				return err
			}
			return o.run(e)
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("db").Usage = "Path of the cache file to prune"
	return cmd
}

// Validate checks the flags.
func (o *pruneOptions) Validate(cmd *cobra.Command) error {
	if err := o.lock.Validate(cmd); err != nil {
		return err
	}
	switch {
	case o.unusedFor < 0:
		return usageErrorf(cmd, "--unused-for must be positive, got %s", o.unusedFor)
	case o.unusedFor == 0 && len(o.stores) == 0:
		return usageErrorf(cmd, "--unused-for DURATION or --store NAME is required")
	}
	return nil
}

func (o *pruneOptions) run(e *env) error {
	path := o.lock.db
	if _, err := os.Stat(path); err != nil {
		return o.lock.openError(err)
	}
	db, err := cachefile.Open(path, cachefile.Options{LockTimeout: o.lock.timeout, ReadOnly: o.dryRun, Now: e.now})
	if err != nil {
		return o.lock.openError(err)
	}
	rep, err := db.PruneStores(cachefile.PruneOptions{UnusedFor: o.unusedFor, Stores: o.stores, DryRun: o.dryRun})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fileError(path, err)
	}
	action := "dropped"
	if o.dryRun {
		action = "would drop"
	}
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Store", Type: "string"},
		{Name: "Objects", Type: "integer"},
		{Name: "Last Used", Type: "string"},
		{Name: "Action", Type: "string"},
	}}
	now := e.now()
	row := func(u cachefile.StoreUse, what string) {
		used := "<never>"
		if !u.LastUsed.IsZero() {
			used = duration.HumanDuration(now.Sub(u.LastUsed)) + " ago"
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []interface{}{u.Name, int64(u.Objects), used, what}})
	}
	objects := 0
	for _, u := range rep.Dropped {
		row(u, action)
		objects += u.Objects
	}
	for _, u := range rep.Kept {
		row(u, "kept")
	}
	out := e.streams.Out
	if len(t.Rows) > 0 {
		if err := printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(t, out); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%s %d store(s) of %d object(s) from %s", action, len(rep.Dropped), objects, path)
	if len(rep.Dropped) > 0 && !o.dryRun {
		fmt.Fprintf(out, "; cachectl compact --db %s returns their space to the filesystem", path)
	}
	fmt.Fprintln(out)
	return nil
}
