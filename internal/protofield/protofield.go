// Package protofield reads the gogo protobuf struct tags of Kubernetes API
// types: which fields the generated code encodes with wire type bytes, and
// which of those are messages. The store's presizing (internal/presize)
// and sharing (internal/protoshare) plan their walks of an encoding from it.
package protofield

import (
	"reflect"
	"strconv"
	"strings"
)

// MaxNumber bounds the field numbers returned; a field past it is left out
// (the built-in types use up to 44).
const MaxNumber = 1024

// Kind says what a field holds.
type Kind uint8

const (
	// Other is a string, a []byte, a slice of strings, a map: anything
	// but the kinds below.
	Other Kind = iota
	// Message is a message held by value (ObjectMeta, PodSpec).
	Message
	// MessagePointer is a message held by pointer (*Affinity).
	MessagePointer
	// MessageSlice is a slice of messages held by value ([]Container).
	MessageSlice
)

// Field is an exported struct field of wire type bytes.
type Field struct {
	Number   int  // its protobuf field number
	Repeated bool // tagged "rep": a slice or a map
	Index    int  // its index in the struct
	Type     reflect.Type
	Kind     Kind
}

var unmarshalerType = reflect.TypeFor[interface{ Unmarshal([]byte) error }]()

// IsMessage reports whether struct type t has generated protobuf decoding.
func IsMessage(t reflect.Type) bool { return reflect.PointerTo(t).Implements(unmarshalerType) }

// BytesFields returns the fields of struct type t of wire type bytes, in
// struct order.
func BytesFields(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		num, rep, ok := parseTag(sf.Tag.Get("protobuf"))
		if !ok || num > MaxNumber || !sf.IsExported() {
			continue
		}
		f := Field{Number: num, Repeated: rep, Index: i, Type: sf.Type}
		switch typ := sf.Type; {
		case typ.Kind() == reflect.Struct && IsMessage(typ):
			f.Kind = Message
		case typ.Kind() == reflect.Pointer && typ.Elem().Kind() == reflect.Struct && IsMessage(typ.Elem()):
			f.Kind = MessagePointer
		case typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.Struct && IsMessage(typ.Elem()):
			f.Kind = MessageSlice
		}
		out = append(out, f)
	}
	return out
}

// ByNumber sets fields[num] to f, growing fields as needed, and returns it:
// a plan's fields are indexed by number.
func ByNumber[F any](fields []F, num int, f F) []F {
	if num >= len(fields) {
		fields = append(fields, make([]F, num+1-len(fields))...)
	}
	fields[num] = f
	return fields
}

// parseTag parses a gogo protobuf struct tag ("bytes,2,rep,name=x") and
// reports the field number of a field of wire type bytes and whether it is
// repeated.
func parseTag(tag string) (num int, rep, ok bool) {
	parts := strings.Split(tag, ",")
	if len(parts) < 3 || parts[0] != "bytes" {
		return 0, false, false
	}
	num, err := strconv.Atoi(parts[1])
	if err != nil || num <= 0 {
		return 0, false, false
	}
	return num, parts[2] == "rep", true
}
