package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/boltinformer/boltinformer"
	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/snapshot"
)

// fileModeProblem says, for check, whether group or others can read or
// write the cache file at path (it holds every cached object); "" if not.
func fileModeProblem(path string) string {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("file mode %04o: group or others can read or write %s (chmod 600 it, or open it with Options.TightenFileMode)", fi.Mode().Perm(), path)
}

// snapshotEncryption says whether a snapshot holds sealed payloads, and
// with which keys, for snapshot status.
func snapshotEncryption(rep snapshot.Report) string {
	if !rep.EncryptionRecorded {
		return fmt.Sprintf("not recorded (format v%d predates it)", rep.FormatVersion)
	}
	var parts []string
	for _, s := range rep.Header.Stores {
		if len(s.KeyIDs) > 0 {
			parts = append(parts, fmt.Sprintf("%s (key %s)", s.Name, strings.Join(s.KeyIDs, ", ")))
		}
	}
	if len(parts) == 0 {
		return "none (every payload is plaintext)"
	}
	return "sealed payloads in " + strings.Join(parts, "; ") + " (restoring needs the key file)"
}

// syncSecurityOptions are sync's flags for encryption at rest and the
// file's mode.
type syncSecurityOptions struct {
	keyFile      string
	allResources bool
	tighten      bool
}

// AddFlags adds --encryption-key-file, --encrypt-all-resources and --tighten-file-mode.
func (o *syncSecurityOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.keyFile, "encryption-key-file", o.keyFile, "Seal Secrets' payloads with the first key of this key file (every key listed opens what it sealed)")
	fs.BoolVar(&o.allResources, "encrypt-all-resources", o.allResources, "With --encryption-key-file, seal the payloads of every resource, not only Secrets")
	fs.BoolVar(&o.tighten, "tighten-file-mode", o.tighten, "Set an existing cache file that group or others can read or write to mode 0600")
}

// apply sets the options' fields in opts.
func (o *syncSecurityOptions) apply(opts boltinformer.Options) boltinformer.Options {
	if o.keyFile != "" {
		opts.Encryption = &boltinformer.EncryptionOptions{KeyFile: o.keyFile, AllResources: o.allResources}
	}
	opts.TightenFileMode = o.tighten
	return opts
}

// refuseSymlink refuses a destination that is a symbolic link unless
// follow: replacing it would write wherever the link points.
func refuseSymlink(path string, follow bool) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 || follow {
		return nil
	}
	target, _ := os.Readlink(path)
	return newError(errSymlink, "%s is a symbolic link to %s; refusing to restore through it (use --follow-symlinks to replace its target)", path, target)
}

// refuseExisting refuses to replace an existing file unless force.
func refuseExisting(path string, force bool) error {
	if _, err := os.Lstat(path); err != nil || force {
		return nil
	}
	return newError(cachefile.ErrExists, "%s exists (use --force to replace it)", path)
}

// saveToStdout streams a snapshot to standard output and its summary to
// standard error. It cannot re-read what it wrote: the reader verifies the
// SHA-256 trailer (cachectl snapshot status).
func saveToStdout(ctx context.Context, e *env, r admin.Reader) error {
	n, err := r.Snapshot(ctx, e.streams.Out)
	if err != nil {
		return fmt.Errorf("save snapshot to standard output: %w", err)
	}
	fmt.Fprintf(e.streams.ErrOut, "Snapshot written to standard output: %s\n", humanBytes(n))
	return nil
}
