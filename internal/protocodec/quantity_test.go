package protocodec

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestQuantityCacheSharesNothing: a quantity decoded from a kept encoding
// equals what Unmarshal gives, and changing it (Add, which mutates an
// inf.Dec in place) changes neither the kept one nor the next decode; a
// quantity of the inf.Dec form is parsed each time.
func TestQuantityCacheSharesNothing(t *testing.T) {
	if decField < 0 {
		t.Fatal("resource.Quantity has no d.Dec field: the cache is off")
	}
	for _, s := range []string{"100m", "128Mi", "1e100", "123456789012345678901234567890"} {
		want := resource.MustParse(s)
		b, err := want.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var first, plain resource.Quantity
		if err := plain.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if err := decodeQuantity(&first, b); err != nil || first.Cmp(plain) != 0 {
			t.Fatalf("%s: decoded %v (%v), Unmarshal gives %v", s, first.String(), err, plain.String())
		}
		first.Add(resource.MustParse("1"))
		var second resource.Quantity
		if err := decodeQuantity(&second, b); err != nil || second.Cmp(plain) != 0 {
			t.Fatalf("%s: after the first decoded one changed, the next decodes to %v (%v); want %v", s, second.String(), err, plain.String())
		}
		quantities.mu.RLock()
		kept, ok := quantities.m[string(b)]
		quantities.mu.RUnlock()
		if ok && kept.Cmp(plain) != 0 {
			t.Fatalf("%s: the kept quantity changed to %v", s, kept.String())
		}
	}
	quantities.mu.RLock()
	_, decKept := quantities.m[mustMarshal(t, "123456789012345678901234567890")]
	_, intKept := quantities.m[mustMarshal(t, "128Mi")]
	quantities.mu.RUnlock()
	if decKept || !intKept {
		t.Errorf("kept: a quantity of 30 digits (inf.Dec form) %v, 128Mi %v; want only 128Mi", decKept, intKept)
	}
}

// TestQuantityMergesIntoWhatItHolds: a quantity message that appears twice
// merges into the first as Unmarshal does; an empty second one leaves it.
func TestQuantityMergesIntoWhatItHolds(t *testing.T) {
	q := resource.MustParse("5")
	if err := decodeQuantity(&q, nil); err != nil || q.Cmp(resource.MustParse("5")) != 0 {
		t.Fatalf("an empty message changed 5 into %v (%v)", q.String(), err)
	}
}

func mustMarshal(t *testing.T, s string) string {
	t.Helper()
	q := resource.MustParse(s)
	b, err := q.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
