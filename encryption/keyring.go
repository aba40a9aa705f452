package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// KeySize is the length of an AES-256 key in bytes.
const KeySize = 32

// Kind and APIVersion identify a key file.
const (
	Kind       = "CacheEncryptionConfiguration"
	APIVersion = "boltinformer.io/v1"
)

// FileMode is the mode a key file should have; LoadFile refuses a key file
// that group or others can read or write.
const FileMode = 0o600

// Config is the key file's content:
//
//	kind: CacheEncryptionConfiguration
//	apiVersion: boltinformer.io/v1
//	keys:                      # the first key seals new writes;
//	- name: key2               # every key listed opens what it sealed
//	  secret: <base64 of 32 random bytes>
//	- name: key1
//	  secret: <base64 of 32 random bytes>
//
// as the apiserver's EncryptionConfiguration lists the keys of its aesgcm
// provider. A name is stored in every record it seals, so it must never be
// reused for another secret.
type Config struct {
	Kind       string      `json:"kind"`
	APIVersion string      `json:"apiVersion"`
	Keys       []KeyConfig `json:"keys"`
}

// KeyConfig is one named key of a key file.
type KeyConfig struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// Keyring holds named AES-256-GCM keys; the first one seals. It is safe
// for concurrent use.
type Keyring struct {
	current string
	aeads   map[string]cipher.AEAD
	names   []string
}

// LoadFile reads a key file (see Config). It refuses a file group or
// others can read or write, as ssh refuses such a private key.
func LoadFile(path string) (*Keyring, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o: group and others must have no access (chmod 600 it)", ErrKeyFile, path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	k, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// Parse parses a key file's content (YAML or JSON).
func Parse(data []byte) (*Keyring, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyFile, err)
	}
	if c.Kind != Kind || c.APIVersion != APIVersion {
		return nil, fmt.Errorf("%w: kind %q apiVersion %q, want %s %s", ErrKeyFile, c.Kind, c.APIVersion, Kind, APIVersion)
	}
	return New(c.Keys)
}

// New builds a keyring from named base64 secrets; the first key seals.
func New(keys []KeyConfig) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrKeyFile)
	}
	k := &Keyring{current: keys[0].Name, aeads: map[string]cipher.AEAD{}}
	for i, kc := range keys {
		if kc.Name == "" || len(kc.Name) > 64 || strings.ContainsAny(kc.Name, " \t\n\x00/") {
			return nil, fmt.Errorf("%w: key %d: name %q must be 1-64 characters without spaces, NUL or slash", ErrKeyFile, i, kc.Name)
		}
		if _, dup := k.aeads[kc.Name]; dup {
			return nil, fmt.Errorf("%w: key name %q is listed twice", ErrKeyFile, kc.Name)
		}
		secret, err := base64.StdEncoding.DecodeString(kc.Secret)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q: secret is not base64: %v", ErrKeyFile, kc.Name, err)
		}
		if len(secret) != KeySize {
			return nil, fmt.Errorf("%w: key %q: secret is %d bytes, want %d (AES-256)", ErrKeyFile, kc.Name, len(secret), KeySize)
		}
		block, err := aes.NewCipher(secret)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q: %v", ErrKeyFile, kc.Name, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q: %v", ErrKeyFile, kc.Name, err)
		}
		k.aeads[kc.Name] = aead
		k.names = append(k.names, kc.Name)
	}
	return k, nil
}

// GenerateKey returns a new random key in a key file's form.
func GenerateKey(name string) (KeyConfig, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return KeyConfig{}, err
	}
	return KeyConfig{Name: name, Secret: base64.StdEncoding.EncodeToString(b)}, nil
}

// Current is the name of the key that seals new writes.
func (k *Keyring) Current() string { return k.current }

// Names lists the keys in file order.
func (k *Keyring) Names() []string { return append([]string(nil), k.names...) }

// Has reports whether the keyring holds the named key.
func (k *Keyring) Has(name string) bool { _, ok := k.aeads[name]; return ok }

// additionalData binds a ciphertext to its place: store name, NUL, object key.
func additionalData(store, key string) []byte {
	ad := make([]byte, 0, len(store)+1+len(key))
	ad = append(ad, store...)
	ad = append(ad, 0)
	return append(ad, key...)
}

// Seal encrypts plaintext with the current key for the record key of
// store. The result is nonce ‖ ciphertext ‖ tag; it returns the key's name
// to store in the record.
func (k *Keyring) Seal(store, key string, plaintext []byte) (string, []byte, error) {
	aead := k.aeads[k.current]
	out := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return "", nil, fmt.Errorf("encryption nonce: %w", err)
	}
	return k.current, aead.Seal(out, out, plaintext, additionalData(store, key)), nil
}

// Open decrypts a payload Seal made with the named key for the record key
// of store. The result is a new slice (sealed may alias bbolt memory).
func (k *Keyring) Open(keyID, store, key string, sealed []byte) ([]byte, error) {
	if k == nil {
		return nil, fmt.Errorf("%w: store %s key %q is sealed with key %q and no key file is configured", ErrUnknownKey, store, key, keyID)
	}
	aead, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: store %s key %q is sealed with key %q, the key file has %s", ErrUnknownKey, store, key, keyID, strings.Join(k.names, ", "))
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("%w: store %s key %q: %d bytes sealed with key %q, shorter than nonce and tag", ErrDecrypt, store, key, len(sealed), keyID)
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], additionalData(store, key))
	if err != nil {
		return nil, fmt.Errorf("%w: store %s key %q with key %q (a wrong secret under that name, a damaged payload, or one moved from another key): %v", ErrDecrypt, store, key, keyID, err)
	}
	return plain, nil
}

// Format renders keys as a key file.
func Format(keys []KeyConfig) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "kind: %s\napiVersion: %s\nkeys:\n", Kind, APIVersion)
	for _, kc := range keys {
		fmt.Fprintf(&b, "- name: %s\n  secret: %s\n", kc.Name, kc.Secret)
	}
	return b.Bytes()
}

// SealedByDefault reports whether a store is encrypted once a key is
// configured without "encrypt every resource": a store of core Secrets,
// whatever shape it caches them in (typed, unstructured or metadata-only,
// whose kind is not Secret). A store is known by its API group and plural
// resource; its kind stands in for the resource where none was recorded.
func SealedByDefault(group, resource, kind string) bool {
	return group == "" && (resource == "secrets" || kind == "Secret")
}
