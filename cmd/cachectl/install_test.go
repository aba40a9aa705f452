package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin manifest (index format
// krew.googlecontainertools.github.com/v1alpha2) that krew needs to install.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		ShortDescription string `json:"shortDescription"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// runIn runs a command in dir with extra environment and returns its
// combined output, failing t if it fails.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestMakeInstall runs `make install` into a temporary PREFIX: cachectl
// and kubectl-cache are on the PATH, `kubectl cache …` runs the plugin
// (kubectl finds kubectl-cache on the PATH) and completes through
// kubectl_complete-cache, completions for bash, zsh and fish are in
// place; `make dist` writes a krew manifest whose sha256 matches its
// archive; `make uninstall` removes everything.
func TestMakeInstall(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	bin := filepath.Join(prefix, "bin")
	runIn(t, root, nil, "make", "install", "PREFIX="+prefix, "VERSION=v9.9.9-test")
	installed := []string{"bin/cachectl", "bin/kubectl-cache", "bin/kubectl_complete-cache",
		"share/bash-completion/completions/cachectl", "share/zsh/site-functions/_cachectl", "share/fish/vendor_completions.d/cachectl.fish"}
	for _, f := range installed {
		if fi, err := os.Stat(filepath.Join(prefix, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(prefix, "share/zsh/site-functions/_cachectl")); !strings.HasPrefix(string(b), "#compdef cachectl") {
		t.Errorf("zsh completion: %.60q", b)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var path []string
	for _, name := range []string{"cachectl", "kubectl-cache"} {
		if p, err := exec.LookPath(name); err != nil || p != filepath.Join(bin, name) {
			t.Errorf("%s on the PATH: %q, %v", name, p, err)
		}
	}
	if out := runIn(t, prefix, path, "cachectl", "version"); !strings.HasPrefix(out, "Client Version: v9.9.9-test\n") {
		t.Errorf("version: %q", out)
	}
	want := cachectl(t, "get", "pods", "-A", "--db", fixtureFile).ok(t).stdout
	// kubectl runs the first kubectl-cache on its PATH. Without kubectl on
	// this machine, run what it would run.
	kubectl := []string{"kubectl", "cache"}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Logf("no kubectl on the PATH: running kubectl-cache as kubectl would")
		kubectl = []string{filepath.Join(bin, "kubectl-cache")}
	}
	// The fixture's clock is an hour after its objects; ages differ now, names and columns do not.
	got := runIn(t, prefix, path, kubectl[0], append(kubectl[1:], "get", "pods", "-A", "--db", fixtureFile, "--stale-after=0")...)
	if strings.Fields(strings.Split(got, "\n")[0])[1] != "NAME" || len(strings.Split(got, "\n")) != len(strings.Split(want, "\n")) {
		t.Errorf("kubectl cache get pods:\n%s\nwant like:\n%s", got, want)
	}
	if out := runIn(t, prefix, path, kubectl[0], append(kubectl[1:], "--help")...); !strings.Contains(out, "Usage:\n  kubectl cache [flags]") {
		t.Errorf("kubectl cache --help:\n%s", out)
	}
	// kubectl's completion of "kubectl cache get <TAB>" runs kubectl_complete-cache.
	if out := runIn(t, prefix, path, filepath.Join(bin, "kubectl_complete-cache"), "get", "--db", fixtureFile, ""); !strings.Contains(out, "pods\n") {
		t.Errorf("kubectl_complete-cache: %q", out)
	}

	dist := filepath.Join(prefix, "dist")
	platform := runtime.GOOS + "/" + runtime.GOARCH
	// The host's cgo setting reuses the build cache of the other builds
	// (a release is static: CGO_ENABLED=0, make dist's default).
	cgo := strings.TrimSpace(runIn(t, root, nil, "go", "env", "CGO_ENABLED"))
	runIn(t, root, []string{"CGO_ENABLED=" + cgo}, "make", "dist", "VERSION=v9.9.9-test", "PLATFORMS="+platform, "DISTDIR="+dist)
	b, err := os.ReadFile(filepath.Join(dist, "cache.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m krewPlugin
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest: %v\n%s", err, b)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "cache" ||
		m.Spec.Version != "v9.9.9-test" || m.Spec.ShortDescription == "" || len(m.Spec.Platforms) != 1 {
		t.Fatalf("manifest:\n%s", b)
	}
	p := m.Spec.Platforms[0]
	archive := filepath.Join(dist, "kubectl-cache_v9.9.9-test_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if p.Sha256 != hex.EncodeToString(sum[:]) || p.Bin != "kubectl-cache" || !strings.HasSuffix(p.URI, "/v9.9.9-test/"+filepath.Base(archive)) ||
		p.Selector.MatchLabels["os"] != runtime.GOOS || p.Selector.MatchLabels["arch"] != runtime.GOARCH {
		t.Errorf("platform entry: %+v", p)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	if strings.Join(names, " ") != "kubectl-cache README.md" {
		t.Errorf("archive holds %v", names)
	}

	runIn(t, root, nil, "make", "uninstall", "PREFIX="+prefix)
	for _, f := range installed {
		if _, err := os.Lstat(filepath.Join(prefix, f)); !os.IsNotExist(err) {
			t.Errorf("%s after uninstall: %v", f, err)
		}
	}
}
