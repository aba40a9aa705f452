package protocodec

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
)

// A cluster's objects hold a few quantities many times over (100m, 128Mi,
// 1Gi), and parsing one (Quantity.Unmarshal: a string, then
// ParseQuantity) is a tenth of a Pod's decode. quantities keeps, by
// encoding, the Quantity each decodes to, and a decode copies it: a
// Quantity of the int64 form (no *inf.Dec) is a value, and its copy
// shares nothing that a method of Quantity changes in place. Those of the
// inf.Dec form (Add mutates the Dec) are not kept.
var quantities = struct {
	mu sync.RWMutex
	m  map[string]resource.Quantity
}{m: map[string]resource.Quantity{}}

// maxQuantities bounds quantities; encodings past it are parsed each time.
const maxQuantities = 4096

// decField is the index of Quantity's d (infDecAmount), whose only field is
// the *inf.Dec; -1 if a release of apimachinery changed the layout.
var decField = func() int {
	f, ok := reflect.TypeFor[resource.Quantity]().FieldByName("d")
	if !ok || f.Type.Kind() != reflect.Struct || f.Type.NumField() != 1 || f.Type.Field(0).Type.Kind() != reflect.Pointer {
		return -1
	}
	return f.Index[0]
}()

// decodeQuantity decodes b into q as q.Unmarshal does.
func decodeQuantity(q *resource.Quantity, b []byte) error {
	if *q != (resource.Quantity{}) || decField < 0 {
		return q.Unmarshal(b) // merges into what q holds
	}
	quantities.mu.RLock()
	v, ok := quantities.m[string(b)]
	quantities.mu.RUnlock()
	if ok {
		*q = v
		return nil
	}
	if err := q.Unmarshal(b); err != nil {
		return err
	}
	if reflect.ValueOf(q).Elem().Field(decField).Field(0).IsNil() {
		quantities.mu.Lock()
		if len(quantities.m) < maxQuantities {
			quantities.m[string(b)] = *q
		}
		quantities.mu.Unlock()
	}
	return nil
}
