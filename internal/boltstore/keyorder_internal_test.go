package boltstore

import (
	"slices"
	"testing"
)

// keyOrder sorts a batch by key and keeps the ops of one key in their own
// order, so that a key's later op still wins.
func TestKeyOrder(t *testing.T) {
	var prepared []*op
	for _, k := range []string{"ns/c", "ns/a", "ns/c", "ns/b", "ns/a", "a/z"} {
		prepared = append(prepared, &op{key: k})
	}
	if got, want := keyOrder(prepared), []int{5, 1, 4, 3, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("keyOrder = %v, want %v", got, want)
	}
}
