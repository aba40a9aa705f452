package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/boltinformer/boltinformer/snapshot"
)

func newSnapshotCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save, restore and inspect point-in-time copies of a cache file",
		Long: `Save a consistent copy of a cache file (from a file or, while a process owns
it, through its admin socket), restore it to a cache file, or inspect it.

A snapshot holds a header (schema version, stores with their
resourceVersions and object counts), the cache file as one bbolt read
transaction saw it, and a SHA-256 of both. An informer opened on a restored
file starts warm and resumes watching from each store's resourceVersion.`,
		Example: `  cachectl snapshot save backup.snap --socket /run/agent.sock
  cachectl snapshot status backup.snap
  cachectl snapshot restore backup.snap --db cache.db`,
		Args: unknownSubcommand,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSnapshotSaveCommand(e), newSnapshotRestoreCommand(e), newSnapshotStatusCommand(e))
	return cmd
}

// writeFileAtomically writes path through a temporary file in the same
// directory (mode 0600), which it fsyncs and renames to path: path holds
// its old content or the whole new one, never part of it.
func writeFileAtomically(path string, fill func(w io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := fill(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil // renamed; only the directory's fsync is missing
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}

// snapshotError makes the snapshot package's errors one clear line.
func snapshotError(path string, err error) error {
	switch {
	case errors.Is(err, snapshot.ErrNotSnapshot):
		return newError(snapshot.ErrNotSnapshot, "%s is not a boltinformer snapshot", path)
	case errors.Is(err, os.ErrNotExist):
		return newError(os.ErrNotExist, "snapshot %s does not exist", path)
	}
	return err
}

// totalObjects sums the stores' object counts of a snapshot header.
func totalObjects(h snapshot.Header) int {
	n := 0
	for _, s := range h.Stores {
		n += s.Objects
	}
	return n
}
