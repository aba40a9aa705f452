package protocodec

import (
	"errors"
	"reflect"
	"testing"
	"unsafe"
)

// node is a recursive message type, as JSONSchemaProps of CRDs is.
type node struct {
	Name     string          `protobuf:"bytes,1,opt,name=name"`
	Children []node          `protobuf:"bytes,2,rep,name=children"`
	Next     *node           `protobuf:"bytes,3,opt,name=next"`
	Props    map[string]node `protobuf:"bytes,4,rep,name=props"`
	Weight   *int32          `protobuf:"bytes,5,opt,name=weight"` // tagged bytes, decoded as its Go type says
}

// TestRecursiveType: a type that holds itself gets a plan (building it
// ends), and decoding follows the encoding's nesting.
func TestRecursiveType(t *testing.T) {
	p := DecoderFor(reflect.TypeFor[node]())
	if p == nil {
		t.Fatal("no plan for a recursive type")
	}
	// name "a", next {children {name "b"} children {}}, props {"k": {name "c"}}, weight 7.
	data := []byte{
		0x0a, 0x01, 'a',
		0x1a, 0x07, 0x12, 0x03, 0x0a, 0x01, 'b', 0x12, 0x00,
		0x22, 0x08, 0x0a, 0x01, 'k', 0x12, 0x03, 0x0a, 0x01, 'c',
		0x28, 0x07,
	}
	var got node
	if err := p.Decode(unsafe.Pointer(&got), data); err != nil {
		t.Fatal(err)
	}
	w := int32(7)
	want := node{Name: "a", Next: &node{Children: []node{{Name: "b"}, {}}}, Props: map[string]node{"k": {Name: "c"}}, Weight: &w}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v; want %+v", got, want)
	}
}

// TestDamage: each kind of damage fails with the error that says so.
func TestDamage(t *testing.T) {
	p := DecoderFor(reflect.TypeFor[node]())
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"string past the end", []byte{0x0a, 0x05, 'a'}, ErrTruncated},
		{"varint of eleven bytes", []byte{0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrIntOverflow},
		{"negative length", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrInvalidLength},
		{"string field as varint", []byte{0x08, 0x01}, ErrWireType},
		{"field number 0", []byte{0x02, 0x00}, ErrWireType},
		{"unknown group not closed", []byte{0x33, 0x08, 0x01}, ErrTruncated},
		{"end of group alone", []byte{0x34}, ErrWireType},
	} {
		var n node
		if err := p.Decode(unsafe.Pointer(&n), c.data); !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
}
