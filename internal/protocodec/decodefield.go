package protocodec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// decodefield.go: the decoding of one field's value by its kind (scalars,
// repeated scalars, map entries); decode.go walks the message.

func (f *field) wireErr(wire int) error {
	return fmt.Errorf("%w %d for field %s", ErrWireType, wire, f.name)
}

// grow makes room for extra more elements in the slice of messages at fp.
// It grows the slice in place (reflect.Value.Grow): one allocation, the
// new array, where reflect.MakeSlice would allocate a slice header too.
func (f *field) grow(fp unsafe.Pointer, extra int) {
	reflect.NewAt(f.typ, fp).Elem().Grow(extra)
}

// scalar decodes the scalar at data[i:] into the field at fp.
func (f *field) scalar(fp unsafe.Pointer, data []byte, i int) (int, error) {
	var v uint64
	switch f.wire {
	case wireVarint:
		var err error
		if v, i, err = varint(data, i); err != nil {
			return i, err
		}
	case wireFixed64:
		if i+8 > len(data) {
			return i, ErrTruncated
		}
		v = binary.LittleEndian.Uint64(data[i:])
		i += 8
	case wireFixed32:
		if i+4 > len(data) {
			return i, ErrTruncated
		}
		v = uint64(binary.LittleEndian.Uint32(data[i:]))
		i += 4
	}
	if f.kind == kScalarPtr {
		fp = f.newScalar(fp)
	}
	switch f.num {
	case nBool:
		*(*bool)(fp) = v != 0
	case nInt32:
		*(*int32)(fp) = int32(v)
	case nInt64:
		*(*int64)(fp) = int64(v)
	case nUint32:
		*(*uint32)(fp) = uint32(v)
	case nUint64:
		*(*uint64)(fp) = v
	case nFloat32:
		*(*float32)(fp) = math.Float32frombits(uint32(v))
	case nFloat64:
		*(*float64)(fp) = math.Float64frombits(v)
	}
	return i, nil
}

// newScalar points the pointer field at fp to a new scalar and returns it.
func (f *field) newScalar(fp unsafe.Pointer) unsafe.Pointer {
	var p unsafe.Pointer
	switch f.num {
	case nBool:
		p = unsafe.Pointer(new(bool))
	case nInt32, nUint32, nFloat32:
		p = unsafe.Pointer(new(uint32))
	default:
		p = unsafe.Pointer(new(uint64))
	}
	*(*unsafe.Pointer)(fp) = p
	return p
}

// scalars decodes one element, or a packed run of them, of a repeated
// varint field.
func (f *field) scalars(fp unsafe.Pointer, data []byte, i, wire int) (int, error) {
	add := func(v uint64) {
		switch f.num {
		case nBool:
			s := (*[]bool)(fp)
			*s = append(*s, v != 0)
		case nInt32, nUint32:
			s := (*[]uint32)(fp)
			*s = append(*s, uint32(v))
		default:
			s := (*[]uint64)(fp)
			*s = append(*s, v)
		}
	}
	switch wire {
	case wireVarint:
		v, i, err := varint(data, i)
		if err != nil {
			return i, err
		}
		add(v)
		return i, nil
	case wireBytes:
		start, end, err := span(data, i, len(data))
		if err != nil {
			return i, err
		}
		for i = start; i < end; {
			var v uint64
			if v, i, err = varint(data, i); err != nil {
				return i, err
			}
			add(v)
		}
		return i, nil
	}
	return i, f.wireErr(wire)
}

// mapEntry decodes the map entry at data[start:end] into the map at fp,
// made with room for hint entries if it is nil. As in generated code, a
// key or value is bounded by the message, not the entry, and an entry
// without one holds the zero value.
func (f *field) mapEntry(fp unsafe.Pointer, data []byte, start, end, hint int) error {
	var key string
	var val []byte
	hasVal := false
	var q resource.Quantity
	var rv reflect.Value // mapReflect: the value, decoded in place
	if f.mapK == mapReflect {
		rv = f.msg.newValue()
	}
	l := len(data)
	for i := start; i < end; {
		entryStart := i
		tag, next, err := varint(data, i)
		if err != nil {
			return err
		}
		i = next
		switch int32(tag >> 3) {
		case 1:
			s, e, err := span(data, i, l)
			if err != nil {
				return err
			}
			key, i = str(data[s:e]), e
		case 2:
			s, e, err := span(data, i, l)
			if err != nil {
				return err
			}
			v := data[s:e:e]
			switch f.mapK {
			case mapString, mapBytes:
				val, hasVal = v, true
			case mapQuantity:
				if err := decodeQuantity(&q, v); err != nil {
					return err
				}
			case mapReflect:
				if err := f.msg.decode(rv.UnsafePointer(), v); err != nil {
					return err
				}
			}
			i = e
		default:
			if i, err = skipPast(data, entryStart, end); err != nil {
				return err
			}
		}
	}
	switch f.mapK {
	case mapString:
		m := (*map[string]string)(fp)
		if *m == nil {
			*m = make(map[string]string, hint)
		}
		(*m)[key] = str(val)
	case mapBytes:
		m := (*map[string][]byte)(fp)
		if *m == nil {
			*m = make(map[string][]byte, hint)
		}
		if !hasVal {
			val = emptyBytes
		}
		(*m)[key] = val
	case mapQuantity:
		m := (*map[string]resource.Quantity)(fp)
		if *m == nil {
			*m = make(map[string]resource.Quantity, hint)
		}
		(*m)[key] = q
	case mapReflect:
		m := reflect.NewAt(f.typ, fp).Elem()
		if m.IsNil() {
			m.Set(reflect.MakeMapWithSize(f.typ, hint))
		}
		k := reflect.New(f.typ.Key()).Elem()
		k.SetString(key)
		m.SetMapIndex(k, rv.Elem())
	}
	return nil
}
