package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/boltinformer/boltinformer/internal/admin"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// sourceOptions say where a read command reads: a file or a live
// process's admin socket.
type sourceOptions struct {
	db      string
	socket  string
	timeout time.Duration
	// keyFile opens sealed payloads of a --db file (see rekey.go).
	keyFile string
	// socketAllowed is false for commands that need the file itself.
	socketAllowed bool
}

func newSourceOptions(socketAllowed bool) sourceOptions {
	return sourceOptions{timeout: cachefile.DefaultLockTimeout, socketAllowed: socketAllowed}
}

// AddFlags adds --db, --timeout and, where allowed, --socket.
func (o *sourceOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.db, "db", o.db, "Path of the cache file (opened read-only, never modified)")
	if o.socketAllowed {
		fs.StringVar(&o.socket, "socket", o.socket, "Admin socket of the process that owns the cache file (instead of --db)")
	}
	fs.StringVar(&o.keyFile, "encryption-key-file", o.keyFile, "Key file that opens sealed payloads of --db (without it, sealed objects are an error naming their key)")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "How long to wait for a file another process holds, or for the socket to answer")
}

// Validate checks that exactly one source is given.
func (o *sourceOptions) Validate(cmd *cobra.Command) error {
	switch {
	case o.db != "" && o.socket != "":
		return usageErrorf(cmd, "--db and --socket are mutually exclusive")
	case o.db == "" && o.socket == "" && o.socketAllowed:
		return usageErrorf(cmd, "--db PATH or --socket PATH is required")
	case o.db == "" && o.socket == "":
		return usageErrorf(cmd, "--db PATH is required")
	case o.timeout <= 0:
		return usageErrorf(cmd, "--timeout must be positive, got %s", o.timeout)
	}
	return nil
}

// open returns the reader for the chosen source.
func (o *sourceOptions) open(ctx context.Context) (admin.Reader, error) {
	if o.socket != "" {
		c, err := admin.Dial(ctx, o.socket, o.timeout)
		if err != nil {
			return nil, o.socketError(err)
		}
		return c, nil
	}
	return o.openFile()
}

// openInfo opens the chosen source and reads its info; on an error the
// reader is closed.
func (o *sourceOptions) openInfo(ctx context.Context) (admin.Reader, *admin.Info, error) {
	r, err := o.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	info, err := r.Info(ctx)
	if err != nil {
		r.Close()
		return nil, nil, o.socketError(err)
	}
	return r, info, nil
}

// openBriefInfo is openInfo for a command that reads a few objects by
// name: a --db file is validated page by page as the reads reach them,
// not whole, and the info read is admin.Local.BriefInfo (no index counts
// or namespaces). A read that walks a store still validates the whole
// file first.
func (o *sourceOptions) openBriefInfo(ctx context.Context) (admin.Reader, *admin.Info, error) {
	if o.socket != "" {
		return o.openInfo(ctx)
	}
	l, err := o.openFileWith(cachefile.Options{LockTimeout: o.timeout, ValidateLazily: true})
	if err != nil {
		return nil, nil, err
	}
	info, err := l.BriefInfo(ctx)
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, info, nil
}

// openFile opens the file read-only for commands that need the DB itself.
func (o *sourceOptions) openFile() (*admin.Local, error) {
	return o.openFileWith(cachefile.Options{LockTimeout: o.timeout})
}

func (o *sourceOptions) openFileWith(opts cachefile.Options) (*admin.Local, error) {
	keys, err := o.keys()
	if err != nil {
		return nil, err
	}
	l, err := admin.OpenFile(o.db, opts)
	if err != nil {
		return nil, o.openError(err)
	}
	l.SetKeys(keys)
	return l, nil
}

// openError says in one line what is wrong with --db and what to do: a
// read command can use the owner's socket instead; a command that needs
// the file itself must wait for the owner to stop.
func (o *sourceOptions) openError(err error) error {
	if errors.Is(err, cachefile.ErrLocked) {
		if o.socketAllowed {
			return newError(cachefile.ErrLocked, "%s is locked by another process (waited %s); read it through that process's admin socket with --socket PATH instead of --db",
				o.db, o.timeout)
		}
		return newError(cachefile.ErrLocked, "%s is locked by another process (waited %s); stop that process first (a read command can use its admin socket with --socket PATH)",
			o.db, o.timeout)
	}
	if nf := notAFileError(o.db, o.socketAllowed); nf != nil {
		return nf
	}
	return fileError(o.db, err)
}

// fileError says in one line what is wrong with a cache file.
func fileError(path string, err error) error {
	if nf := notAFileError(path, false); nf != nil {
		return nf
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return newError(os.ErrNotExist, "cache file %s does not exist", path)
	case errors.Is(err, cachefile.ErrNeedsMigration):
		return fmt.Errorf("%w; run: cachectl migrate --db %s", err, path)
	case errors.Is(err, cachefile.ErrNewerSchema):
		return fmt.Errorf("%w; use a newer cachectl", err)
	}
	return err
}

// notAFileError explains a --db that names a directory (and names the
// cache file in it, if it holds one) or a unix socket (and, where the
// command takes --socket, says to read through it); nil for anything else.
func notAFileError(path string, socketFlag bool) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil
	case fi.IsDir():
		switch files := boltFilesIn(path); len(files) {
		case 0:
			return newError(cachefile.ErrNotCacheFile, "--db %s is a directory, not a cache file, and holds none", path)
		case 1:
			return newError(cachefile.ErrNotCacheFile, "--db %s is a directory; the cache file in it is %s (--db %s)", path, files[0], files[0])
		default:
			return newError(cachefile.ErrNotCacheFile, "--db %s is a directory holding %d bbolt files; name one with --db: %s", path, len(files), strings.Join(files, ", "))
		}
	case fi.Mode()&os.ModeSocket != 0 && socketFlag:
		return newError(cachefile.ErrNotCacheFile, "--db %s is a unix socket, not a cache file; read through it with --socket %s", path, path)
	case fi.Mode()&os.ModeSocket != 0:
		return newError(cachefile.ErrNotCacheFile, "--db %s is a unix socket (a process's admin socket?), not a cache file; name the cache file itself", path)
	}
	return nil
}

// boltFilesIn returns the paths of the bbolt files directly in dir, sorted:
// the candidates for a --db that named the directory.
func boltFilesIn(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var files []string
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); !e.IsDir() && cachefile.IsBoltFile(p) {
			files = append(files, p)
		}
	}
	return files
}

// socketError says in one line what is wrong with the admin socket; an
// error that is not about the socket (or a --db source) is returned as it is.
func (o *sourceOptions) socketError(err error) error {
	path := o.socket
	switch {
	case path == "":
		return err
	case errors.Is(err, os.ErrNotExist):
		return newError(os.ErrNotExist, "admin socket %s does not exist (is the process running with an admin socket?)", path)
	case errors.Is(err, admin.ErrNoServer):
		return newError(admin.ErrNoServer, "nothing is serving admin socket %s (the process is gone; read the file with --db)", path)
	case errors.Is(err, admin.ErrNotSocket):
		return newError(admin.ErrNotSocket, "--socket %s is not a unix socket (to read a cache file, use --db)", path)
	case errors.Is(err, admin.ErrNoAnswer):
		// Its file stays locked while it is stopped: --db on the file waits
		// for the lock, a copy of it does not.
		return newError(admin.ErrNoAnswer, "the process holding the cache file did not answer on admin socket %s within %s (--timeout): is it stopped or overloaded? "+
			"A copy of its cache file (cp) can be read with --db", path, o.timeout)
	}
	return err
}
