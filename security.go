package boltinformer

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

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

// storeIdentity is the identity of an informer's store. Its group is the
// resource's: the example object's, or, when the example does not name its
// kind (dynamic and metadata-only informers), InformerOptions.Group.
func storeIdentity(gvk schema.GroupVersionKind, opts InformerOptions) (*cachefile.Identity, error) {
	group := opts.Group
	if gvk.Kind != "" {
		if opts.Group != "" && opts.Group != gvk.Group {
			return nil, fmt.Errorf("%w: InformerOptions.Group %q differs from the example object's group %q", ErrUnknownKind, opts.Group, gvk.Group)
		}
		group = gvk.Group
	}
	return &cachefile.Identity{
		Group: group, Version: gvk.Version, Kind: gvk.Kind, Resource: opts.Resource,
		Namespace: opts.Namespace, LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector,
		Scope: opts.Scope,
	}, nil
}

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
