package boltinformer

import (
	"fmt"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// EncryptionOptions seal record payloads at rest with AES-256-GCM. Keys,
// index values, resourceVersions and the rest of a record's envelope stay
// plaintext: names and labels are metadata, as in etcd.
type EncryptionOptions struct {
	// KeyFile is the path of a key file (see encryption.Config for its
	// format; it must have mode 0600). Its first key seals new writes;
	// every key listed opens what it sealed.
	KeyFile string
	// Keys, when set, is used instead of KeyFile.
	Keys *encryption.Keyring
	// AllResources seals the payloads of every store; otherwise only the
	// stores of Secrets, typed, unstructured or metadata-only
	// (encryption.SealedByDefault). Stores read sealed records either way.
	AllResources bool
}

// keyring loads the configured keys; nil without encryption.
func (o *EncryptionOptions) keyring() (*encryption.Keyring, error) {
	if o == nil {
		return nil, nil
	}
	if o.Keys != nil {
		return o.Keys, nil
	}
	if o.KeyFile == "" {
		return nil, fmt.Errorf("%w: Options.Encryption needs KeyFile or Keys", encryption.ErrKeyFile)
	}
	return encryption.LoadFile(o.KeyFile)
}

// seals says whether the store of this identity seals what it writes. It
// follows the resource, not the Go type: a Secret cached unstructured or
// metadata-only (whose last-applied annotation holds the whole Secret) is
// sealed as a typed one is.
func (c *Cache) seals(id *cachefile.Identity) bool {
	return c.keys != nil && (c.opts.Encryption.AllResources || encryption.SealedByDefault(id.Group, id.Resource, id.Kind))
}
