package protocodec

import (
	"reflect"
	"strconv"
	"strings"
)

// Every plan of this package is built from the gogo protobuf struct tags
// of Kubernetes API types (`protobuf:"bytes,2,rep,name=containers"`),
// parsed here and nowhere else.

// maxFieldNumber bounds the field numbers a plan handles (the built-in
// types use up to 44): a decoder of a type with a larger one is not made,
// and the presizer and the sharer leave such a field alone.
const maxFieldNumber = 1024

// tag is a parsed protobuf struct tag.
type tag struct {
	wire string // "bytes", "varint", "fixed64", …
	num  int    // the field number, 1 to maxFieldNumber
	rep  bool   // "rep": repeated (a slice or a map)
}

// parseTag parses a gogo protobuf struct tag ("bytes,2,rep,name=x").
func parseTag(s string) (tag, bool) {
	parts := strings.Split(s, ",")
	if len(parts) < 3 {
		return tag{}, false
	}
	num, err := strconv.Atoi(parts[1])
	if err != nil || num <= 0 || num > maxFieldNumber {
		return tag{}, false
	}
	return tag{wire: parts[0], num: num, rep: parts[2] == "rep"}, true
}

type unmarshaler interface{ Unmarshal([]byte) error }

var unmarshalerType = reflect.TypeFor[unmarshaler]()

// isMessage reports whether struct type t has generated protobuf decoding.
func isMessage(t reflect.Type) bool { return reflect.PointerTo(t).Implements(unmarshalerType) }

// bytesKind says what a field of wire type bytes holds.
type bytesKind uint8

const (
	// bytesOther is a string, a []byte, a slice of strings, a map:
	// anything but the kinds below.
	bytesOther bytesKind = iota
	// bytesMessage is a message held by value (ObjectMeta, PodSpec).
	bytesMessage
	// bytesMessagePtr is a message held by pointer (*Affinity).
	bytesMessagePtr
	// bytesMessages is a slice of messages held by value ([]Container).
	bytesMessages
)

// bytesField is an exported struct field of wire type bytes.
type bytesField struct {
	tag
	index int // its index in the struct
	typ   reflect.Type
	kind  bytesKind
}

// bytesFields returns the fields of struct type t of wire type bytes, in
// struct order: those the presizer and the sharer walk.
func bytesFields(t reflect.Type) []bytesField {
	var out []bytesField
	for i := range t.NumField() {
		sf := t.Field(i)
		tg, ok := parseTag(sf.Tag.Get("protobuf"))
		if !ok || tg.wire != "bytes" || !sf.IsExported() {
			continue
		}
		f := bytesField{tag: tg, index: i, typ: sf.Type}
		switch typ := sf.Type; {
		case typ.Kind() == reflect.Struct && isMessage(typ):
			f.kind = bytesMessage
		case typ.Kind() == reflect.Pointer && typ.Elem().Kind() == reflect.Struct && isMessage(typ.Elem()):
			f.kind = bytesMessagePtr
		case typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.Struct && isMessage(typ.Elem()):
			f.kind = bytesMessages
		}
		out = append(out, f)
	}
	return out
}

// byNumber sets fields[num] to f, growing fields as needed, and returns it:
// a plan's fields are indexed by number.
func byNumber[F any](fields []F, num int, f F) []F {
	if num >= len(fields) {
		fields = append(fields, make([]F, num+1-len(fields))...)
	}
	fields[num] = f
	return fields
}
