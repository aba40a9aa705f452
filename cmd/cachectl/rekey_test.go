package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

// secretPlaintexts are the fixture Secret's password and its base64 in the
// last-applied annotation.
var secretPlaintexts = []string{"hunter2", "aHVudGVyMg=="}

func writeKeyFile(t *testing.T, keys ...encryption.KeyConfig) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(p, encryption.Format(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func genKey(t *testing.T, name string) encryption.KeyConfig {
	t.Helper()
	k, err := encryption.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func holdsPlaintext(t *testing.T, path string) bool {
	t.Helper()
	return len(testutil.FileHolds(t, path, secretPlaintexts...)) > 0
}

// TestRekeyPlaintextFileThenRotate is the documented migration of a file
// written before a key was configured: rekey seals the Secrets in place,
// compact drops the freed pages that still hold the plaintext, and
// neither the file nor a snapshot of it holds it then. Without the key,
// info, check and key-only reads work and reading a Secret names the key.
// Then a rotation: a new key first, rekey, the old key removed.
func TestRekeyPlaintextFileThenRotate(t *testing.T) {
	path := copyFile(t, fixtureFile)
	if !holdsPlaintext(t, path) {
		t.Fatal("the fixture must hold the plaintext, or the scans below prove nothing")
	}
	k1, k2 := genKey(t, "k1"), genKey(t, "k2")
	keys1 := writeKeyFile(t, k1)

	r := cachectl(t, "rekey", "--db", path, "--encryption-key-file", keys1).ok(t)
	if !strings.Contains(r.stdout, "store v1/Secret: 1 sealed, 0 moved to key k1, 0 unchanged") || !strings.Contains(r.stdout, "store v1/ConfigMap: 0 sealed") {
		t.Fatalf("rekey output:\n%s", r.stdout)
	}
	compacted := filepath.Join(t.TempDir(), "compact.db")
	cachectl(t, "compact", "--db", path, "--to", compacted).ok(t)
	if holdsPlaintext(t, compacted) {
		t.Fatal("plaintext in the compacted file after rekey")
	}
	snap := filepath.Join(t.TempDir(), "snap")
	cachectl(t, "snapshot", "save", snap, "--db", compacted).ok(t)
	if holdsPlaintext(t, snap) {
		t.Fatal("plaintext in a snapshot of the rekeyed file")
	}
	if out := cachectl(t, "snapshot", "status", snap).ok(t).stdout; !strings.Contains(out, "Encryption: sealed payloads in v1/Secret (key k1)") {
		t.Fatalf("snapshot status:\n%s", out)
	}

	// Without the key.
	before := testutil.StatFile(t, compacted)
	cachectl(t, "info", "--db", compacted).ok(t)
	if out := cachectl(t, "check", "--db", compacted).ok(t).stdout; !strings.Contains(out, `store v1/Secret: 1 object(s) not decoded (`) || !strings.Contains(out, `"k1"`) {
		t.Fatalf("check without the key:\n%s", out)
	}
	cachectl(t, "get", "secrets", "-A", "-o", "yaml", "--db", compacted).failed(t, 1, `"k1"`, "encrypted")
	if out := cachectl(t, "get", "secrets", "-A", "-o", "name", "--db", compacted).ok(t).stdout; out != "secret/db-password\n" {
		t.Fatalf("get -o name without the key: %q", out)
	}
	if out := cachectl(t, "get", "secret", "db-password", "-n", "default", "-o", "name", "--db", compacted).ok(t).stdout; out != "secret/db-password\n" {
		t.Fatalf("get NAME -o name without the key: %q", out)
	}
	testutil.Unchanged(t, compacted, before)

	// With it.
	out := cachectl(t, "get", "secrets", "-A", "-o", "yaml", "--show-secrets", "--db", compacted, "--encryption-key-file", keys1).ok(t).stdout
	if !strings.Contains(out, "aHVudGVyMg==") {
		t.Fatalf("get with the key:\n%s", out)
	}
	cachectl(t, "check", "--db", compacted, "--encryption-key-file", keys1).ok(t)

	// Rotation.
	rotated := writeKeyFile(t, k2, k1)
	r = cachectl(t, "rekey", "--db", compacted, "--encryption-key-file", rotated).ok(t)
	if !strings.Contains(r.stdout, "store v1/Secret: 0 sealed, 1 moved to key k2, 0 unchanged") {
		t.Fatalf("rotation output:\n%s", r.stdout)
	}
	only2 := writeKeyFile(t, k2)
	if got := cachectl(t, "get", "secrets", "-A", "-o", "yaml", "--show-secrets", "--db", compacted, "--encryption-key-file", only2).ok(t).stdout; got != out {
		t.Fatalf("after rotation:\n%s\nwant\n%s", got, out)
	}
	cachectl(t, "get", "secrets", "-A", "--db", compacted, "--encryption-key-file", keys1).failed(t, 1, `"k2"`)
	wrong := writeKeyFile(t, encryption.KeyConfig{Name: "k2", Secret: k1.Secret})
	cachectl(t, "get", "secrets", "-A", "--db", compacted, "--encryption-key-file", wrong).failed(t, 1, `"k2"`, "does not decrypt")
}

func TestRekeyRefusesHeldFileAndBadInput(t *testing.T) {
	path := copyFile(t, fixtureFile)
	keys := writeKeyFile(t, genKey(t, "k1"))
	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	cachectl(t, "rekey", "--db", path, "--encryption-key-file", keys, "--timeout", "100ms").failed(t, 1, "locked by another process")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cachectl(t, "rekey", "--db", path).failed(t, 1, "--encryption-key-file is required")
	cachectl(t, "rekey", "--db", path, "--encryption-key-file", keys, "--batch", "0").failed(t, 1, "--batch")
	loose := filepath.Join(t.TempDir(), "loose.yaml")
	if err := os.WriteFile(loose, encryption.Format([]encryption.KeyConfig{genKey(t, "k")}), 0o644); err != nil {
		t.Fatal(err)
	}
	cachectl(t, "rekey", "--db", path, "--encryption-key-file", loose).failed(t, 1, "0644")
}

// TestCheckFlagsLooseFileMode: a cache file group or others can read is a problem.
func TestCheckFlagsLooseFileMode(t *testing.T) {
	path := copyFile(t, fixtureFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	cachectl(t, "check", "--db", path).failed(t, 1, "file mode 0644", "chmod 600")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	cachectl(t, "check", "--db", path).ok(t)
}
