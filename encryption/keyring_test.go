package encryption_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boltinformer/boltinformer/encryption"
)

func keys(t *testing.T, names ...string) []encryption.KeyConfig {
	t.Helper()
	var out []encryption.KeyConfig
	for _, n := range names {
		k, err := encryption.GenerateKey(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

func TestSealOpenRotationAndBinding(t *testing.T) {
	ks := keys(t, "k1", "k2")
	old, err := encryption.New(ks[:1])
	if err != nil {
		t.Fatal(err)
	}
	id, sealed, err := old.Seal("Secret.v1", "ns/a", []byte("hunter2"))
	if err != nil || id != "k1" {
		t.Fatalf("seal: %q %v", id, err)
	}
	if bytes.Contains(sealed, []byte("hunter2")) {
		t.Fatal("ciphertext holds the plaintext")
	}
	// Rotation: k2 first, k1 still reads.
	rotated, err := encryption.New([]encryption.KeyConfig{ks[1], ks[0]})
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Current() != "k2" {
		t.Fatalf("current %q", rotated.Current())
	}
	plain, err := rotated.Open(id, "Secret.v1", "ns/a", sealed)
	if err != nil || string(plain) != "hunter2" {
		t.Fatalf("open after rotation: %q %v", plain, err)
	}
	// Moved under another key or store: refused.
	for _, where := range [][2]string{{"Secret.v1", "ns/b"}, {"ConfigMap.v1", "ns/a"}} {
		if _, err := rotated.Open(id, where[0], where[1], sealed); !errors.Is(err, encryption.ErrDecrypt) {
			t.Fatalf("moved to %v: %v", where, err)
		}
	}
	// A wrong secret under the same name.
	wrong, err := encryption.New([]encryption.KeyConfig{{Name: "k1", Secret: ks[1].Secret}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Open(id, "Secret.v1", "ns/a", sealed); !errors.Is(err, encryption.ErrDecrypt) || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("wrong key: %v", err)
	}
	// A missing key, and no keyring at all: the error names the key id.
	only2, _ := encryption.New(ks[1:])
	if _, err := only2.Open(id, "Secret.v1", "ns/a", sealed); !errors.Is(err, encryption.ErrUnknownKey) || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("missing key: %v", err)
	}
	var none *encryption.Keyring
	if _, err := none.Open(id, "Secret.v1", "ns/a", sealed); !errors.Is(err, encryption.ErrUnknownKey) || !strings.Contains(err.Error(), `"k1"`) {
		t.Fatalf("no keyring: %v", err)
	}
	// A damaged ciphertext.
	sealed[len(sealed)-1] ^= 1
	if _, err := rotated.Open(id, "Secret.v1", "ns/a", sealed); !errors.Is(err, encryption.ErrDecrypt) {
		t.Fatalf("damaged: %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(good, encryption.Format(keys(t, "a", "b")), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := encryption.LoadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(k.Names(), ","); got != "a,b" || k.Current() != "a" {
		t.Fatalf("names %s current %s", got, k.Current())
	}
	if err := os.Chmod(good, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := encryption.LoadFile(good); !errors.Is(err, encryption.ErrKeyFile) || !strings.Contains(err.Error(), "0640") {
		t.Fatalf("group-readable key file: %v", err)
	}
	short := encryption.KeyConfig{Name: "s", Secret: "c2hvcnQ="}
	for name, content := range map[string]string{
		"no keys":    "kind: CacheEncryptionConfiguration\napiVersion: boltinformer.io/v1\nkeys: []\n",
		"wrong kind": "kind: EncryptionConfiguration\napiVersion: boltinformer.io/v1\n",
		"short key":  string(encryption.Format([]encryption.KeyConfig{short})),
		"not base64": "kind: CacheEncryptionConfiguration\napiVersion: boltinformer.io/v1\nkeys:\n- name: x\n  secret: '!!'\n",
		"duplicate":  string(encryption.Format(append(keys(t, "d"), keys(t, "d")...))),
		"bad name":   string(encryption.Format(keys(t, "a b"))),
		"unknown":    "kind: CacheEncryptionConfiguration\napiVersion: boltinformer.io/v1\nprovider: kms\n",
		"not yaml":   "\x00\x01[",
	} {
		if _, err := encryption.Parse([]byte(content)); !errors.Is(err, encryption.ErrKeyFile) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSealedByDefaultFollowsTheResource: core Secrets are sealed in every
// shape a store caches them in, named by resource or, without one, by
// kind; a resource of the same name in another group is not.
func TestSealedByDefaultFollowsTheResource(t *testing.T) {
	for _, c := range []struct {
		group, resource, kind string
		want                  bool
	}{
		{"", "secrets", "Secret", true},                // typed
		{"", "secrets", "", true},                      // dynamic or metadata factory: no kind
		{"", "", "Secret", true},                       // no resource recorded
		{"", "secrets", "PartialObjectMetadata", true}, // metadata-only, kind of the shape
		{"", "configmaps", "ConfigMap", false},
		{"", "", "", false},
		{"example.com", "secrets", "", false}, // a CRD named secrets
		{"example.com", "secrets", "Secret", false},
	} {
		if got := encryption.SealedByDefault(c.group, c.resource, c.kind); got != c.want {
			t.Errorf("SealedByDefault(%q, %q, %q) = %v, want %v", c.group, c.resource, c.kind, got, c.want)
		}
	}
}
