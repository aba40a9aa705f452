package snapshot_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	publicfile "github.com/boltinformer/boltinformer/cachefile"
	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/boltstore"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/snapshot"
)

// TestSnapshotCarriesCiphertextAndSaysSo: a snapshot of a file with sealed
// Secrets holds no plaintext, its header lists the key per store, and a
// format 1 snapshot still reads with the encryption not recorded.
func TestSnapshotCarriesCiphertextAndSaysSo(t *testing.T) {
	dir := t.TempDir()
	kc, err := encryption.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := encryption.New([]encryption.KeyConfig{kc})
	if err != nil {
		t.Fatal(err)
	}
	db, err := cachefile.Open(filepath.Join(dir, "cache.db"), cachefile.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	secrets, err := boltstore.New(db, "Secret.v1", boltstore.StoreOptions{Object: &v1.Secret{}, Keys: keys, Encrypt: true})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := boltstore.New(db, "ConfigMap.v1", boltstore.StoreOptions{Object: &v1.ConfigMap{}})
	if err != nil {
		t.Fatal(err)
	}
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}
	if _, err := secrets.Apply([]boltstore.Op{{Obj: &v1.Secret{ObjectMeta: meta, Data: map[string][]byte{"p": []byte("hunter2-in-snapshot")}}}}, "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Apply([]boltstore.Op{{Obj: &v1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"p": "plain-config"}}}}, "1"); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snap")
	hdr, err := snapshot.Save(background(), (*publicfile.File)(db), snap, snapshot.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("hunter2-in-snapshot")) || !bytes.Contains(raw, []byte("plain-config")) {
		t.Fatal("the snapshot must carry the sealed payload as stored, and only that one")
	}
	rep, err := snapshot.Status(snap)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]string{}
	for _, s := range rep.Header.Stores {
		byName[s.Name] = s.KeyIDs
	}
	if !rep.EncryptionRecorded || !rep.Header.Encrypted() || len(byName["Secret.v1"]) != 1 || byName["Secret.v1"][0] != "k1" || len(byName["ConfigMap.v1"]) != 0 || !hdr.Encrypted() {
		t.Fatalf("status: recorded %v, key ids %v", rep.EncryptionRecorded, byName)
	}

	// A format 1 snapshot (written before key ids were recorded) still reads.
	forgeFormat := func(format uint32) string {
		b := bytes.Clone(raw)
		binary.BigEndian.PutUint32(b[len("boltinformer-snapshot\n"):], format)
		sum := sha256.Sum256(b[:len(b)-sha256.Size])
		copy(b[len(b)-sha256.Size:], sum[:])
		p := filepath.Join(dir, "forged")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rep, err = snapshot.Status(forgeFormat(1))
	if err != nil || rep.EncryptionRecorded || !rep.ChecksumValid {
		t.Fatalf("format 1: %+v %v", rep, err)
	}
	if _, err := snapshot.Status(forgeFormat(snapshot.FormatVersion + 1)); !errors.Is(err, snapshot.ErrUnsupportedFormat) {
		t.Fatalf("a newer format: %v", err)
	}
}
