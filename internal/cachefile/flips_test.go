package cachefile

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/boltinformer/boltinformer/internal/testutil"
)

// flipRole is the child role that damages copies of a cache file and
// opens each one every way a process does; flipsEnv holds its work: the
// good file, a directory to write copies in, then one "offset xor" a line.
const (
	flipRole = "flips"
	flipsEnv = "BOLTINFORMER_TEST_FLIPS"
)

// flipPatterns are the flips tried on each byte of a page's headers:
// every single bit, and all of them.
var flipPatterns = []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff}

// TestRandomByteFlipsNeverFault damages a small cache file one flip at a
// time and opens, reads and checks each copy every way a process does:
// whatever the flip hit, the answer is data or an error, never a fault or
// a panic inside bbolt, opened whole or lazily (readLazily). It flips
// random bytes of the whole file, and every byte of the headers of a leaf
// page and of the branch page above it in a store's objects bucket, and
// of the pages above those on a lookup's path, with each of flipPatterns. The copies are opened
// in child processes, one per byte, so that a fault (bbolt walks pages in
// goroutines no caller can recover) fails that case instead of the test
// binary.
func TestRandomByteFlipsNeverFault(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "good.db")
	writeCache(t, src, 12)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	branch, leaf := objectsPages(t, src, data)
	start := time.Now()
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		var flips [][2]int
		for range 150 {
			flips = append(flips, [2]int{rng.IntN(len(data)), 1 + rng.IntN(255)})
		}
		// Four children: a fault stops one child's remaining flips only.
		for i := 0; i < len(flips); i += 40 {
			if f := runFlips(t, src, flips[i:min(i+40, len(flips))]); f != "" {
				t.Errorf("random flips: %s", f)
			}
		}
	})
	pages := []struct {
		name     string
		id       uint64
		patterns []byte
	}{{"objects leaf", leaf, flipPatterns}, {"objects branch", branch, flipPatterns}}
	// The pages above them on every lookup's path: the root bucket's and
	// the stores bucket's (when they are pages of their own, not inline),
	// each byte flipped fewer ways.
	for _, pg := range upperPages(t, src) {
		pages = append(pages, struct {
			name     string
			id       uint64
			patterns []byte
		}{pg.name, pg.id, []byte{0x01, 0x80, 0xff}})
	}
	for _, pg := range pages {
		t.Run(strings.ReplaceAll(pg.name, " ", "-"), func(t *testing.T) {
			page := data[pg.id*PageSize : (pg.id+1)*PageSize]
			n := pageHeaderSize + int(binary.LittleEndian.Uint16(page[10:]))*elementSize
			// One child per header (the page's, then each element's): a
			// fault ends that header's remaining flips only.
			for h := 0; h < n; h += elementSize {
				var flips [][2]int
				for i := h; i < h+elementSize; i++ {
					for _, x := range pg.patterns {
						flips = append(flips, [2]int{int(pg.id)*PageSize + i, int(x)})
					}
				}
				if f := runFlips(t, src, flips); f != "" {
					t.Errorf("%s %d, header bytes %d-%d (%s…): %s", pg.name, pg.id, h, h+elementSize-1, headerField(page, h), f)
				}
			}
			t.Logf("%s %d: %d header bytes flipped %d ways each", pg.name, pg.id, n, len(pg.patterns))
		})
	}
	t.Logf("took %s", time.Since(start).Round(time.Millisecond))
}

// objectsPages returns the root page of store Pod.v1's objects bucket,
// which must be a branch page, and its first child, a leaf.
func objectsPages(t *testing.T, path string, data []byte) (branch, leaf uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		branch = uint64(tx.Bucket(StoresBucket).Bucket([]byte("Pod.v1")).Bucket(ObjectsBucket).Root())
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	page := data[branch*PageSize:]
	if flags := binary.LittleEndian.Uint16(page[8:]); branch == 0 || flags != flagBranch {
		t.Fatalf("the objects bucket's root is page %d of type %#x; the fixture needs a branch page there", branch, flags)
	}
	leaf = binary.LittleEndian.Uint64(page[pageHeaderSize+8:])
	if flags := binary.LittleEndian.Uint16(data[leaf*PageSize+8:]); flags != flagLeaf {
		t.Fatalf("the objects bucket's first child, page %d, has type %#x, not a leaf", leaf, flags)
	}
	return branch, leaf
}

// upperPages returns the root pages of the file's root bucket, of its
// stores bucket and of store Pod.v1's bucket that are pages of their own.
func upperPages(t *testing.T, path string) []struct {
	name string
	id   uint64
} {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []struct {
		name string
		id   uint64
	}
	err = db.View(func(tx *bolt.Tx) error {
		stores := tx.Bucket(StoresBucket)
		for _, b := range []struct {
			name string
			id   uint64
		}{
			{"root", uint64(tx.Cursor().Bucket().Root())},
			{"stores", uint64(stores.Root())},
			{"store Pod.v1", uint64(stores.Bucket([]byte("Pod.v1")).Root())},
		} {
			if b.id != 0 {
				out = append(out, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// headerField names the field of a page's header or element headers that
// byte i of page falls in.
func headerField(page []byte, i int) string {
	if i < pageHeaderSize {
		return [...]string{"id", "id", "id", "id", "id", "id", "id", "id", "flags", "flags", "count", "count",
			"overflow", "overflow", "overflow", "overflow"}[i]
	}
	e, f := (i-pageHeaderSize)/elementSize, (i-pageHeaderSize)%elementSize/4
	fields := [...]string{"flags", "pos", "ksize", "vsize"}
	if binary.LittleEndian.Uint16(page[8:]) == flagBranch {
		fields = [...]string{"pos", "ksize", "pgid", "pgid"}
	}
	return fmt.Sprintf("element %d %s", e, fields[f])
}

// runFlips runs a child that applies each flip (offset, xor) to its own
// copy of src and opens it every way (flipChild); it returns how the child
// failed, or "".
func runFlips(t *testing.T, src string, flips [][2]int) string {
	t.Helper()
	work := []string{src, t.TempDir()}
	for _, f := range flips {
		work = append(work, fmt.Sprintf("%d %d", f[0], f[1]))
	}
	run := testutil.RunToEnd(t, 2*time.Minute, []string{testutil.ChildRoleEnv + "=" + flipRole, flipsEnv + "=" + strings.Join(work, "\n")})
	return run.Failure()
}

// flipChild is the flipRole child: for each flip it prints the flip, then
// damages a copy of the file with it and opens it every way (openEveryWay).
// It exits 1 if bbolt panicked on a copy, and dies if bbolt faulted.
func flipChild() int {
	work := strings.Split(os.Getenv(flipsEnv), "\n")
	data, err := os.ReadFile(work[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	path := filepath.Join(work[1], "flipped.db")
	for _, line := range work[2:] {
		var off, xor int
		if _, err := fmt.Sscan(line, &off, &xor); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Printf("byte %d ^ %#02x\n", off, xor)
		d := append([]byte(nil), data...)
		d[off] ^= byte(xor)
		if err := os.WriteFile(path, d, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if p := openEveryWay(path); p != "" {
			fmt.Fprintf(os.Stderr, "byte %d ^ %#02x: bbolt panicked: %s\n", off, xor, p)
			return 1
		}
	}
	return 0
}

// openEveryWay validates, checks and opens the file at path as every
// entry point does (Validate, PageUsage, Check, a read-only open with
// CheckTx as cachectl check runs it, Info and a read of every record and
// index entry, then the same with a writable open and a write). Errors are
// expected; it returns the first error text showing that bbolt panicked,
// which means it walked a page that validation had not passed.
func openEveryWay(path string) string {
	var texts []string
	note := func(err error) {
		if err != nil {
			texts = append(texts, err.Error())
		}
	}
	note(Validate(path, ValidatePages))
	_, err := PageUsage(path, time.Second)
	note(err)
	for _, p := range Check(path, CheckOptions{}, time.Second) {
		texts = append(texts, p.String())
	}
	for _, ro := range []bool{true, false} {
		db, err := Open(path, Options{ReadOnly: ro, NoSync: true, LockTimeout: time.Second})
		note(err)
		if err != nil {
			continue
		}
		_, err = db.Info()
		note(err)
		note(db.View(func(tx *bolt.Tx) error {
			for _, p := range CheckTx(tx, CheckOptions{}) {
				texts = append(texts, p.String())
			}
			return ForEachStoreTx(tx, func(name string, b *Buckets, err error) error {
				if err != nil {
					return err
				}
				note(b.Idx.ForEachBucket(func(k []byte) error {
					return b.Index(string(k)).ForEach(func(k, v []byte) error { return nil })
				}))
				return b.Objects.ForEach(func(k, v []byte) error {
					_, err := DecodeRecord(k, v)
					note(err)
					return nil
				})
			})
		}))
		if !ro {
			note(db.Update(&Write{Fn: func(tx *bolt.Tx) error {
				b, err := CreateStoreTx(tx, "Pod.v1")
				if err != nil {
					return err
				}
				return b.Objects.Put([]byte("ns/new"), make([]byte, 3000))
			}}))
		}
		note(db.Close())
	}
	texts = append(texts, readLazily(path)...)
	for _, s := range texts {
		if strings.Contains(s, "panic") || strings.Contains(s, "runtime error") || strings.Contains(s, "assertion failed") {
			return s
		}
	}
	return ""
}

// readLazily opens the file at path read-only with ValidateLazily and
// reads it as a point read does (cachectl get NAME): the file's meta data,
// each store's state and index names and first record, and records by key
// (writeCache's, and keys it does not hold), each through ViewLookups;
// then a View, which validates the whole file. It returns the errors' texts.
func readLazily(path string) []string {
	var texts []string
	note := func(err error) {
		if err != nil {
			texts = append(texts, err.Error())
		}
	}
	db, err := Open(path, Options{ReadOnly: true, ValidateLazily: true, LockTimeout: time.Second})
	if err != nil {
		return []string{err.Error()}
	}
	defer func() { note(db.Close()) }()
	for _, store := range []string{"Pod.v1", "ConfigMap.v1", "Missing.v1"} {
		note(db.ViewLookups(StoreLookups(store), func(tx *bolt.Tx) error {
			b, err := StoreTx(tx, store)
			if err != nil {
				return err
			}
			if _, err := StoreStateTx(b); err != nil {
				return err
			}
			return b.Idx.ForEachBucket(func([]byte) error { return nil })
		}))
		note(db.ViewLookups([]Lookup{FirstObjectLookup(store)}, func(tx *bolt.Tx) error {
			b, err := ObjectsTx(tx, []byte(store))
			if err != nil {
				return err
			}
			k, v := b.Cursor().First()
			if k != nil {
				_, err = DecodeRecord(k, v)
			}
			return err
		}))
		// The first, a middle and the last key, and two it does not hold.
		for _, i := range []int{-1, 0, 6, 11, 12} {
			key := []byte(fmt.Sprintf("ns/obj-%05d", i))
			if i < 0 {
				key = []byte("a")
			}
			note(db.ViewLookups([]Lookup{ObjectLookup(store, key)}, func(tx *bolt.Tx) error {
				b, err := ObjectsTx(tx, []byte(store))
				if err != nil {
					return err
				}
				if v := b.Get(key); v != nil {
					_, err = DecodeRecord(key, v)
				}
				return err
			}))
		}
	}
	_, err = db.Info()
	note(err)
	return texts
}
