package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/boltstore/boltstoretest"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/testutil"
)

var secretIdentity = &cachefile.Identity{Version: "v1", Kind: "Secret", Resource: "secrets"}

// secretMarker is the plaintext the scans look for in raw file bytes.
const secretMarker = "hunter2-plaintext"

func secret(name, rv, password string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv, Labels: map[string]string{"app": name}},
		// Large enough that records span many pages, freed and reused.
		Data: map[string][]byte{"password": []byte(password), "padding": bytes.Repeat([]byte("p"), 1500)},
	}
}

func secretOpts(keys *encryption.Keyring, encrypt bool) boltstore.StoreOptions {
	return boltstore.StoreOptions{
		Object: &v1.Secret{}, Identity: secretIdentity, Keys: keys, Encrypt: encrypt,
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	}
}

func keyring(t *testing.T, keys ...encryption.KeyConfig) *encryption.Keyring {
	t.Helper()
	k, err := encryption.New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newKey(t *testing.T, name string) encryption.KeyConfig {
	t.Helper()
	k, err := encryption.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func openSecrets(t *testing.T, path string, opts boltstore.StoreOptions) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, "Secret.v1", cachefile.Options{NoSync: true}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// churn writes n Secrets, updates every one with a new password, deletes
// half and writes new ones, so bbolt frees and reuses pages that held them.
func churn(t *testing.T, s *boltstore.Store, n int) {
	t.Helper()
	rv := 0
	apply := func(ops []boltstore.Op) {
		rv++
		if _, err := s.Apply(ops, fmt.Sprint(rv)); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 3; round++ {
		var ops []boltstore.Op
		for i := range n {
			ops = append(ops, boltstore.Op{Type: boltstore.OpUpsert, Obj: secret(fmt.Sprintf("s%d-%d", i, round/2), fmt.Sprint(rv*1000+i+1), fmt.Sprintf("%s-%d-%d", secretMarker, i, round))})
		}
		apply(ops)
	}
	var del []boltstore.Op
	for i := 0; i < n; i += 2 {
		del = append(del, boltstore.Op{Type: boltstore.OpDelete, Obj: secret(fmt.Sprintf("s%d-0", i), "", "")})
	}
	apply(del)
}

func fileContains(t *testing.T, path, s string) bool {
	t.Helper()
	return len(testutil.FileHolds(t, path, s)) > 0
}

// TestEncryptedPayloadNeverOnDisk writes, updates and deletes Secrets and
// scans the whole file, freed pages included, for their plaintext. The
// same churn without a key finds it, so the scan can fail.
func TestEncryptedPayloadNeverOnDisk(t *testing.T) {
	keys := keyring(t, newKey(t, "k1"))
	for _, encrypt := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "cache.db")
		s := openSecrets(t, path, secretOpts(keys, encrypt))
		churn(t, s, 150)
		obj, ok, err := s.GetByKey("ns/s1-1")
		if err != nil || !ok || !strings.HasPrefix(string(obj.(*v1.Secret).Data["password"]), secretMarker) {
			t.Fatalf("encrypt=%v: get %v %v %v", encrypt, obj, ok, err)
		}
		boltstoretest.Verify(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := fileContains(t, path, secretMarker); got == encrypt {
			t.Fatalf("encrypt=%v: plaintext in the file: %v", encrypt, got)
		}
		if encrypt && !fileContains(t, path, "ns/s1-1") {
			t.Fatal("keys must stay plaintext (index entries)")
		}
	}
}

// TestEncryptedUpdateOldObject: an update of a sealed record hands on the
// object stored before, opened and decoded against the new version, as
// for a plaintext record.
func TestEncryptedUpdateOldObject(t *testing.T) {
	keys := keyring(t, newKey(t, "k1"))
	for _, encrypt := range []bool{false, true} {
		s := openSecrets(t, filepath.Join(t.TempDir(), "cache.db"), secretOpts(keys, encrypt))
		if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: secret("s", "1", "first")}}, "1"); err != nil {
			t.Fatal(err)
		}
		stored, _, err := s.GetByKey("ns/s")
		if err != nil {
			t.Fatal(err)
		}
		next := secret("s", "2", "second")
		changes, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: next}}, "2")
		if err != nil || changes[0].OldErr != nil {
			t.Fatalf("encrypt=%v: apply %v, old %v", encrypt, err, changes[0].OldErr)
		}
		old := changes[0].Old.(*v1.Secret)
		if !apiequality.Semantic.DeepEqual(old, stored) || string(old.Data["password"]) != "first" {
			t.Fatalf("encrypt=%v: old object %+v, want the stored %+v", encrypt, old, stored)
		}
		if reflect.ValueOf(old.Labels).UnsafePointer() != reflect.ValueOf(next.Labels).UnsafePointer() {
			t.Errorf("encrypt=%v: the unchanged labels were decoded, not shared with the new version", encrypt)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func storedKeyIDs(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return keyIDs(t, b.View)
}

// keyIDs counts the records per "store:key id" (plaintext: "store:").
func keyIDs(t *testing.T, view func(func(tx *bolt.Tx) error) error) map[string]int {
	t.Helper()
	ids := map[string]int{}
	err := view(func(tx *bolt.Tx) error {
		return cachefile.ForEachStoreTx(tx, func(name string, bk *cachefile.Buckets, err error) error {
			if err != nil {
				return err
			}
			return bk.Objects.ForEach(func(k, v []byte) error {
				r, err := cachefile.DecodeRecord(k, v)
				if err != nil {
					return err
				}
				ids[name+":"+r.KeyID]++
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestEncryptionRotationWrongAndMissingKey: a new key first in the list
// seals new writes and the old one still reads; Rekey moves every record
// to the new key without touching RVs or index entries; then the old key
// alone, a wrong secret under the new key's name, or no key fail with an
// error naming the key, while keys and index keys stay readable.
func TestEncryptionRotationWrongAndMissingKey(t *testing.T) {
	k1, k2 := newKey(t, "k1"), newKey(t, "k2")
	path := filepath.Join(t.TempDir(), "cache.db")
	s := openSecrets(t, path, secretOpts(keyring(t, k1), true))
	for i := range 10 {
		if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: secret(fmt.Sprint("s", i), fmt.Sprint(i+1), secretMarker)}}, fmt.Sprint(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rotated := keyring(t, k2, k1)
	s = openSecrets(t, path, secretOpts(rotated, true))
	if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: secret("s0", "20", secretMarker+"-new")}}, "20"); err != nil {
		t.Fatal(err)
	}
	if obj, ok, err := s.GetByKey("ns/s5"); err != nil || !ok || string(obj.(*v1.Secret).Data["password"]) != secretMarker {
		t.Fatalf("old key after rotation: %v %v %v", obj, ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storedKeyIDs(t, path); got["Secret.v1:k1"] != 9 || got["Secret.v1:k2"] != 1 {
		t.Fatalf("key ids after one write: %v", got)
	}

	db, err := cachefile.Open(path, cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var progress int
	stats, err := boltstore.Rekey(context.Background(), db, boltstore.RekeyOptions{Keys: rotated, BatchSize: 3, Progress: func(string, int) { progress++ }})
	if err != nil {
		t.Fatal(err)
	}
	if st := stats["Secret.v1"]; st.Resealed != 9 || st.Unchanged != 1 || st.Sealed != 0 || progress < 3 {
		t.Fatalf("rekey: %+v after %d batches", st, progress)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storedKeyIDs(t, path); got["Secret.v1:k2"] != 10 || len(got) != 1 {
		t.Fatalf("key ids after rekey: %v", got)
	}

	s = openSecrets(t, path, secretOpts(keyring(t, k2), true))
	if rv, _ := s.ResourceVersion(); rv != "20" {
		t.Fatalf("rekey moved the RV to %q", rv)
	}
	boltstoretest.Verify(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	wrongK2 := encryption.KeyConfig{Name: "k2", Secret: k1.Secret}
	for name, c := range map[string]struct {
		keys *encryption.Keyring
		want error
	}{
		"old key only":     {keyring(t, k1), encryption.ErrUnknownKey},
		"wrong secret":     {keyring(t, wrongK2), encryption.ErrDecrypt},
		"no key file":      {nil, encryption.ErrUnknownKey},
		"another key name": {keyring(t, newKey(t, "k3")), encryption.ErrUnknownKey},
	} {
		s := openSecrets(t, path, secretOpts(c.keys, false))
		_, _, err := s.GetByKey("ns/s3")
		if !errors.Is(err, boltstore.ErrEncrypted) || !errors.Is(err, c.want) || !strings.Contains(err.Error(), `"k2"`) {
			t.Errorf("%s: get: %v", name, err)
		}
		if err := s.ForEach(func(interface{}) error { return nil }); !errors.Is(err, boltstore.ErrEncrypted) {
			t.Errorf("%s: ForEach: %v", name, err)
		}
		if keys := s.ListKeys(); len(keys) != 10 {
			t.Errorf("%s: keys without the key: %v", name, keys)
		}
		if keys, err := s.IndexKeys(cache.NamespaceIndex, "ns"); err != nil || len(keys) != 10 {
			t.Errorf("%s: index keys without the key: %v %v", name, keys, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := boltstore.Open(path, "Secret.v1", cachefile.Options{}, secretOpts(nil, true)); !errors.Is(err, boltstore.ErrNoKeys) {
		t.Fatalf("encrypt without keys: %v", err)
	}
}

// TestRekeyPlaintextFileInPlace is the migration of a file written before
// a key was configured: Rekey seals the Secrets in place (other stores
// only with EncryptAll); a store opened with a key reads both forms in the
// meantime. The old plaintext stays in freed pages until the file is
// compacted (tested with the compacted copy in package migrations' caller,
// cmd/cachectl).
func TestRekeyPlaintextFileInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	s := openSecrets(t, path, secretOpts(nil, false))
	churn(t, s, 20)
	cm, err := boltstore.New(s.DB(), "ConfigMap.v1", boltstore.StoreOptions{Object: &v1.ConfigMap{}, Identity: &cachefile.Identity{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cm.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", ResourceVersion: "5"}}}}, "5"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	keys := keyring(t, newKey(t, "k1"))
	// Mixed: a keyed store reads plaintext records written before.
	s = openSecrets(t, path, secretOpts(keys, true))
	if _, err := s.Apply([]boltstore.Op{{Type: boltstore.OpUpsert, Obj: secret("new", "100", secretMarker)}}, "100"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.GetByKey("ns/s1-1"); err != nil || !ok {
		t.Fatalf("plaintext record with a key configured: %v %v", ok, err)
	}
	before := keyIDs(t, s.DB().View)
	stats, err := boltstore.Rekey(context.Background(), s.DB(), boltstore.RekeyOptions{Keys: keys, BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if st := stats["Secret.v1"]; st.Sealed != before["Secret.v1:"] || st.Unchanged != 1 {
		t.Fatalf("rekey secrets: %+v, before %v", st, before)
	}
	if st := stats["ConfigMap.v1"]; st.Sealed != 0 || st.Unchanged != 1 {
		t.Fatalf("rekey configmaps without EncryptAll: %+v", st)
	}
	if stats, err = boltstore.Rekey(context.Background(), s.DB(), boltstore.RekeyOptions{Keys: keys, EncryptAll: true}); err != nil || stats["ConfigMap.v1"].Sealed != 1 {
		t.Fatalf("rekey with EncryptAll: %+v %v", stats, err)
	}
	boltstoretest.Verify(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storedKeyIDs(t, path); got["Secret.v1:"] != 0 || got["ConfigMap.v1:"] != 0 {
		t.Fatalf("plaintext records left: %v", got)
	}
}
