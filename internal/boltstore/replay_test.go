package boltstore_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/boltinformer/boltinformer/cachefile"
)

// TestReplaySkipsDamagedRecordsAndDropDamagedRepairs: Replay hands every
// good object to fn and every damaged record (a flipped byte, an envelope
// that does not parse) to damaged, in key order, without stopping; an
// error from damaged stops it. DropDamaged removes those records and their
// index entries, and the store verifies clean with the right count.
func TestReplaySkipsDamagedRecordsAndDropDamagedRepairs(t *testing.T) {
	s := damagedStore(t, []string{"p", "q", "r", "s"}, "q", "s")

	var good, bad []string
	err := s.Replay(func(obj interface{}) error {
		good = append(good, obj.(interface{ GetName() string }).GetName())
		return nil
	}, func(key string, err error) error {
		if !errors.Is(err, cachefile.ErrCorruptRecord) {
			t.Errorf("damaged %s: want ErrCorruptRecord, got %v", key, err)
		}
		bad = append(bad, key)
		return nil
	})
	if err != nil || fmt.Sprint(good) != "[p r]" || fmt.Sprint(bad) != "[a/q a/s]" {
		t.Fatalf("Replay: good %v, damaged %v, err %v; want [p r], [a/q a/s], nil", good, bad, err)
	}
	stop := errors.New("stop")
	n := 0
	err = s.Replay(func(interface{}) error { n++; return nil }, func(string, error) error { return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("an error from damaged: %d objects, err %v; want 1 and the error", n, err)
	}

	if err := s.DropDamaged(bad); err != nil {
		t.Fatal(err)
	}
	if keys, _ := s.IndexKeys("node", "n1"); fmt.Sprint(keys) != "[a/p a/r]" {
		t.Fatalf("index entries after DropDamaged: %v", keys)
	}
	if n, err := s.Len(); err != nil || n != 2 {
		t.Fatalf("Len after DropDamaged: %d %v", n, err)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
}
