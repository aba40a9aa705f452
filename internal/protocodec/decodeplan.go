package protocodec

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Generated Unmarshal copies each of an object's strings into an
// allocation of its own, and grows each slice of messages 1, 2, 4, 8, a
// copy at each step. That is most of what a read of the store costs
// (BenchmarkReadPath in internal/boltstore compares a read with it, and
// make bench's read scenario with client-go's and controller-runtime's
// readers); client-go's informer pays none of it, and controller-runtime's
// deep copy shares the strings.
//
// A Decoder is built once for a type from its struct tags (tags.go): for
// each field number, where
// the field lies in the struct and how its value is decoded. Strings and
// []byte are made on the buffer; a []byte gets no spare capacity, so an
// append to it copies instead of writing over what follows. A message's
// repeated fields and maps are counted in one pass over its bytes and made
// as large as the payload fills them. Types without tags (metav1.Time,
// resource.Quantity) are decoded by their own Unmarshal, a Quantity once
// per encoding (quantity.go). The Go type of a field, not its tag, says how
// it is decoded: some tags are wrong (SecretVolumeSource's defaultMode).
//
// The object it gives is the one generated Unmarshal gives
// (reflect.DeepEqual: nil and empty differ), and it fails where
// Unmarshal fails; the tests compare both on every built-in type, on
// fuzzed objects and on damaged encodings.

// Decoder decodes one struct type.
type Decoder struct {
	name    string
	fields  []field // by field number; kind skip for the numbers it lacks
	counted int     // fields counted before decoding (slots 0..counted-1)
}

type kind uint8

const (
	skip        kind = iota // not a field of the type
	kString                 // string
	kStringPtr              // *string
	kBytes                  // []byte
	kScalar                 // bool, ints, floats
	kScalarPtr              // a pointer to one
	kScalars                // a repeated varint ([]int64), packed or not
	kMessage                // a message held by value
	kMessagePtr             // a message held by pointer
	kMessages               // a slice of messages held by value
	kStrings                // []string
	kBytesList              // [][]byte
	kMap                    // a map with string keys
)

type numKind uint8

const (
	nBool numKind = iota + 1
	nInt32
	nInt64
	nUint32
	nUint64
	nFloat32
	nFloat64
)

type mapKind uint8

const (
	mapReflect  mapKind = iota // any other value type
	mapString                  // map[string-kind]string-kind
	mapBytes                   // map[string-kind][]byte
	mapQuantity                // map[string-kind]resource.Quantity
)

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireStart   = 3
	wireEnd     = 4
	wireFixed32 = 5
)

type field struct {
	kind kind
	num  numKind
	wire int // the wire type of a scalar
	name string
	off  uintptr
	typ  reflect.Type // the Go type of the field
	msg  *msgType     // messages, slices of messages, map values that are messages
	slot int          // counted fields; -1 for the others
	mapK mapKind
}

// msgType decodes one message type: by its plan, or by its own Unmarshal.
type msgType struct {
	typ    reflect.Type
	size   uintptr
	plan   *Decoder
	method func(p unsafe.Pointer, b []byte) error
}

// newValue returns a pointer to a new value of m's type, as generated code
// makes one (&T{}): a message that is a slice (ExtraValue) is empty, not nil.
func (m *msgType) newValue() reflect.Value {
	v := reflect.New(m.typ)
	if m.typ.Kind() == reflect.Slice {
		v.Elem().Set(reflect.MakeSlice(m.typ, 0, 0))
	}
	return v
}

func (m *msgType) decode(p unsafe.Pointer, b []byte) error {
	if m.plan != nil {
		return m.plan.decode(p, b)
	}
	return m.method(p, b)
}

// maxCounted bounds the counted fields of one message (PodSpec has 9, no
// built-in type more than 10); the counters live on the stack. The
// decoder grows the fields past it as they fill; the presizer leaves them
// to Unmarshal.
const maxCounted = 32

var (
	decoders   sync.Map // reflect.Type -> *Decoder; nil: not decodable here
	decodersMu sync.Mutex
)

// DecoderFor returns the decoder of struct type t, or nil when a type it
// holds cannot be decoded by tags and has no Unmarshal of its own (the
// caller then uses the type's generated Unmarshal).
func DecoderFor(t reflect.Type) *Decoder {
	if p, ok := decoders.Load(t); ok {
		return p.(*Decoder)
	}
	decodersMu.Lock()
	defer decodersMu.Unlock()
	if p, ok := decoders.Load(t); ok {
		return p.(*Decoder)
	}
	b := builder{msgs: map[reflect.Type]*msgType{}}
	m := b.message(t)
	var p *Decoder
	if b.err == nil && m.plan != nil {
		p = m.plan
	}
	decoders.Store(t, p)
	return p
}

// Decode decodes data, the protobuf encoding of p's type, into the struct
// obj points to, as the type's generated Unmarshal would. The object's
// strings and byte slices point into data, which must never be written
// again while the object lives.
func (p *Decoder) Decode(obj unsafe.Pointer, data []byte) error {
	return p.decode(obj, data)
}

type builder struct {
	msgs map[reflect.Type]*msgType
	err  error
}

func (b *builder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf(format, args...)
	}
}

// message returns how to decode message type t (a struct with tags, or
// any type with an Unmarshal method).
func (b *builder) message(t reflect.Type) *msgType {
	if m, ok := b.msgs[t]; ok {
		return m
	}
	m := &msgType{typ: t, size: t.Size()}
	b.msgs[t] = m
	if t.Kind() == reflect.Struct && hasTags(t) {
		m.plan = b.plan(t)
		return m
	}
	if !reflect.PointerTo(t).Implements(unmarshalerType) {
		b.fail("%s has neither protobuf tags nor Unmarshal", t)
		m.method = func(unsafe.Pointer, []byte) error { return fmt.Errorf("%w: %s", ErrWireType, t) }
		return m
	}
	m.method = methodOf(t)
	return m
}

// methodOf returns the Unmarshal of t; those of the types every object
// holds are called directly.
func methodOf(t reflect.Type) func(p unsafe.Pointer, b []byte) error {
	switch t {
	case reflect.TypeFor[metav1.Time]():
		return func(p unsafe.Pointer, b []byte) error { return (*metav1.Time)(p).Unmarshal(b) }
	case reflect.TypeFor[resource.Quantity]():
		return func(p unsafe.Pointer, b []byte) error { return decodeQuantity((*resource.Quantity)(p), b) }
	case reflect.TypeFor[metav1.MicroTime]():
		return func(p unsafe.Pointer, b []byte) error { return (*metav1.MicroTime)(p).Unmarshal(b) }
	}
	return func(p unsafe.Pointer, b []byte) error {
		return reflect.NewAt(t, p).Interface().(unmarshaler).Unmarshal(b)
	}
}

// hasTags reports whether struct type t has a field with a protobuf tag.
func hasTags(t reflect.Type) bool {
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("protobuf"); tag != "" && tag != "-" {
			return true
		}
	}
	return false
}

func (b *builder) plan(t reflect.Type) *Decoder {
	p := &Decoder{name: t.Name()}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("protobuf")
		if tag == "" || tag == "-" {
			continue // not encoded: TypeMeta, RawExtension.Object
		}
		ti, ok := parseTag(tag)
		if !ok || !sf.IsExported() {
			b.fail("%s.%s: protobuf tag %q", t, sf.Name, tag)
			continue
		}
		f := field{name: sf.Name, off: sf.Offset, typ: sf.Type, slot: -1}
		before := b.err
		b.fieldKind(&f, sf, ti)
		if before == nil && b.err != nil {
			b.err = fmt.Errorf("%s.%s: %w", t, sf.Name, b.err)
		}
		if f.kind == kMessages || f.kind == kStrings || f.kind == kBytesList || f.kind == kMap {
			if p.counted < maxCounted {
				f.slot = p.counted
				p.counted++
			}
		}
		if ti.num >= len(p.fields) {
			p.fields = append(p.fields, make([]field, ti.num+1-len(p.fields))...)
		}
		p.fields[ti.num] = f
	}
	return p
}

func (b *builder) fieldKind(f *field, sf reflect.StructField, ti tag) {
	ft := sf.Type
	// The Go type says what the field is, as the .proto the code was
	// generated from does; a tag may say otherwise (SecretVolumeSource's
	// defaultMode, an int32, is tagged "bytes"). A number is a varint
	// unless its tag says fixed, a float a fixed64 or fixed32 (double,
	// float).
	st, sk := ft, kScalar
	switch {
	case ft.Kind() == reflect.Pointer:
		st, sk = ft.Elem(), kScalarPtr
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 && !reflect.PointerTo(ft).Implements(unmarshalerType):
		st, sk = ft.Elem(), kScalars
	}
	switch st.Kind() {
	case reflect.Bool, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		f.kind, f.wire = sk, wireVarint
		switch {
		case ti.wire == "fixed64" || st.Kind() == reflect.Float64:
			f.wire = wireFixed64
		case ti.wire == "fixed32" || st.Kind() == reflect.Float32:
			f.wire = wireFixed32
		case strings.HasPrefix(ti.wire, "zigzag"):
			b.fail("%s: %s", sf.Name, ti.wire)
		}
		if f.num = numOf(st.Kind(), f.wire); f.num == 0 || (sk == kScalars && f.wire != wireVarint) {
			b.fail("%s: %s %s", sf.Name, ti.wire, ft)
		}
		return
	case reflect.Int, reflect.Uint, reflect.Int8, reflect.Int16, reflect.Uint16, reflect.Uintptr:
		b.fail("%s: %s", sf.Name, ft)
		return
	}
	// The Go type says what the field is: some tags say "rep" on a
	// string or a pointer (ClusterTrustBundleProjection's).
	switch {
	case ft.Kind() == reflect.String:
		f.kind = kString
	case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.String:
		f.kind = kStringPtr
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
		f.kind = kBytes
	case ft.Kind() == reflect.Map:
		b.mapKind(f, sf)
	case ft.Kind() == reflect.Slice && !reflect.PointerTo(ft).Implements(unmarshalerType):
		switch el := ft.Elem(); {
		case el.Kind() == reflect.String:
			f.kind = kStrings
		case el.Kind() == reflect.Slice && el.Elem().Kind() == reflect.Uint8:
			f.kind = kBytesList
		case el.Kind() == reflect.Pointer:
			b.fail("%s: slice of pointers", sf.Name)
		default:
			f.kind, f.msg = kMessages, b.message(el)
		}
	case ft.Kind() == reflect.Pointer:
		f.kind, f.msg = kMessagePtr, b.message(ft.Elem())
	default:
		f.kind, f.msg = kMessage, b.message(ft)
	}
}

// mapKind decoders a map field: string keys, and values that are strings,
// bytes or messages, as the generated code of Kubernetes types has them.
func (b *builder) mapKind(f *field, sf reflect.StructField) {
	f.kind = kMap
	kt, vt := sf.Type.Key(), sf.Type.Elem()
	// Entries are {1: key, 2: value}; the tags name them only sometimes
	// (ObjectMeta's labels have none), and only of wire type bytes here.
	for _, tag := range []string{sf.Tag.Get("protobuf_key"), sf.Tag.Get("protobuf_val")} {
		if ti, ok := parseTag(tag); tag != "" && (!ok || ti.wire != "bytes") {
			b.fail("%s: map entry tag %q", sf.Name, tag)
			return
		}
	}
	if kt.Kind() != reflect.String {
		b.fail("%s: map %s", sf.Name, sf.Type)
		return
	}
	switch {
	case vt.Kind() == reflect.String:
		f.mapK = mapString
	case vt.Kind() == reflect.Slice && vt.Elem().Kind() == reflect.Uint8:
		f.mapK = mapBytes
	case vt == reflect.TypeFor[resource.Quantity]():
		f.mapK, f.msg = mapQuantity, b.message(vt)
	case vt.Kind() == reflect.Pointer:
		b.fail("%s: map of pointers", sf.Name)
	default:
		f.mapK, f.msg = mapReflect, b.message(vt)
	}
}

func numOf(k reflect.Kind, wire int) numKind {
	switch wire {
	case wireVarint:
		switch k {
		case reflect.Bool:
			return nBool
		case reflect.Int32:
			return nInt32
		case reflect.Int64:
			return nInt64
		case reflect.Uint32:
			return nUint32
		case reflect.Uint64:
			return nUint64
		}
	case wireFixed64:
		switch k {
		case reflect.Float64:
			return nFloat64
		case reflect.Int64:
			return nInt64
		case reflect.Uint64:
			return nUint64
		}
	case wireFixed32:
		switch k {
		case reflect.Float32:
			return nFloat32
		case reflect.Int32:
			return nInt32
		case reflect.Uint32:
			return nUint32
		}
	}
	return 0
}
