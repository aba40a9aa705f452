package testutil

import (
	"encoding/binary"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// FlipLeafElement damages the bbolt file at path as a flipped bit on disk
// does: it XORs byte b (0 to 15) of the first element header of the first
// leaf page of the bucket at bucketPath (nested bucket names from the
// root) with xor. The bucket must be stored in pages of its own, not
// inline. Byte 4 with xor 0x40 moves the element's key 64 bytes (a leaf
// element header is flags, pos, ksize, vsize: four little-endian uint32s).
func FlipLeafElement(t testing.TB, path string, b int, xor byte, bucketPath ...string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root uint64
	err = db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucketPath[0]))
		for _, name := range bucketPath[1:] {
			if bk == nil {
				break
			}
			bk = bk.Bucket([]byte(name))
		}
		if bk != nil {
			root = uint64(bk.Root())
		}
		return nil
	})
	pageSize := db.Info().PageSize
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if root == 0 {
		t.Fatalf("%s: bucket %q is missing or inline; it needs pages of its own", path, bucketPath)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const branchFlag, leafFlag, pageHeader = 0x01, 0x02, 16
	id := root
	for {
		page := data[int(id)*pageSize:]
		switch flags := binary.LittleEndian.Uint16(page[8:]); {
		case flags == branchFlag:
			id = binary.LittleEndian.Uint64(page[pageHeader+8:]) // first child
			continue
		case flags != leafFlag || binary.LittleEndian.Uint16(page[10:]) == 0:
			t.Fatalf("%s: page %d under bucket %q has type %#x and %d elements, not a leaf with elements",
				path, id, bucketPath, flags, binary.LittleEndian.Uint16(page[10:]))
		}
		page[pageHeader+b] ^= xor
		break
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
