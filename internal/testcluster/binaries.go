package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	// BinDirEnv names the environment variable that overrides where the
	// etcd and kube-apiserver binaries are looked up.
	BinDirEnv = "BOLTINFORMER_BIN"

	// rootModule is the module path of the repository root's go.mod; bin/
	// sits beside it.
	rootModule = "github.com/boltinformer/boltinformer"
)

// BinDir returns the directory holding the etcd and kube-apiserver
// binaries, for tests that start them by other means (controller-runtime's
// envtest, through KUBEBUILDER_ASSETS): $BOLTINFORMER_BIN if set, else bin/
// at the root of this repository.
func BinDir() (string, error) { return findBinDir() }

// findBinDir returns the directory holding the server binaries: $BOLTINFORMER_BIN
// if set, else bin/ beside the go.mod of the root module, found by walking up
// from the working directory (go test runs in the package's directory).
func findBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testcluster: locate bin/: %w", err)
	}
	for dir := wd; ; {
		if isRootModule(filepath.Join(dir, "go.mod")) {
			return filepath.Join(dir, "bin"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: no go.mod of module %s above %s; set %s to the directory holding etcd and kube-apiserver",
				ErrBinaryNotFound, rootModule, wd, BinDirEnv)
		}
		dir = parent
	}
}

// isRootModule reports whether path is a go.mod that declares rootModule
// (and not, say, hack/tools/go.mod, whose module path extends it).
func isRootModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		if i := strings.Index(rest, "//"); i >= 0 {
			rest = rest[:i]
		}
		return strings.Trim(strings.TrimSpace(rest), `"`+"`") == rootModule
	}
	return false
}

// binary returns the path of the named executable in dir, or an error
// wrapping ErrBinaryNotFound that says how to build it.
func binary(dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: %s does not exist; run `make e2e-deps` (hack/e2e-deps.sh) to build etcd and kube-apiserver into bin/",
			ErrBinaryNotFound, path)
	case err != nil:
		return "", fmt.Errorf("testcluster: %s: %w", path, err)
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%w: %s is not an executable file; run `make e2e-deps`", ErrBinaryNotFound, path)
	}
	return path, nil
}
