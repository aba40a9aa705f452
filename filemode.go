package boltinformer

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"
)

// ownerOnly is the permission bits a cache file may have beyond the owner's.
const ownerOnly = 0o077

// prepareFileMode creates the file's directory with mode 0700 when it is
// missing, and, for an existing file that group or others can read or
// write, logs a warning or (TightenFileMode) sets its mode to 0600.
func prepareFileMode(path string, tighten bool, logger klog.Logger) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create the cache file's directory: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&ownerOnly == 0 {
		return nil // a new file is created 0600
	}
	if !tighten {
		logger.Info("Warning: the cache file is readable or writable by group or others; chmod 600 it or set Options.TightenFileMode", "path", path, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
		return nil
	}
	if err := os.Chmod(path, fi.Mode().Perm()&^ownerOnly); err != nil {
		return fmt.Errorf("tighten the cache file's mode: %w", err)
	}
	logger.Info("Tightened the cache file's mode", "path", path, "from", fmt.Sprintf("%04o", fi.Mode().Perm()), "to", fmt.Sprintf("%04o", fi.Mode().Perm()&^ownerOnly))
	return nil
}
