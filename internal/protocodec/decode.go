package protocodec

import (
	"fmt"
	"unsafe"
)

// sliceHeader is the layout of every Go slice.
type sliceHeader struct {
	data unsafe.Pointer
	len  int
	cap  int
}

// emptyBytes is the value of a map entry of bytes that has none, non-nil
// as generated code makes it; with no capacity, an append to it copies.
var emptyBytes = []byte{}

// str is b as a string sharing its bytes.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// varint reads the varint at b[i:] as generated code does: at most ten
// bytes, the bits past 64 dropped.
func varint(b []byte, i int) (uint64, int, error) {
	if i < len(b) && b[i] < 0x80 {
		return uint64(b[i]), i + 1, nil
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, i, ErrIntOverflow
		}
		if i >= len(b) {
			return 0, i, ErrTruncated
		}
		c := b[i]
		i++
		v |= uint64(c&0x7F) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
}

// span reads a length at b[i:] and returns where the value it announces
// starts and ends, checking the end against limit.
func span(b []byte, i, limit int) (int, int, error) {
	n, i, err := varint(b, i)
	if err != nil {
		return 0, 0, err
	}
	ln := int(n)
	if ln < 0 {
		return 0, 0, ErrInvalidLength
	}
	end := i + ln
	if end < 0 {
		return 0, 0, ErrInvalidLength
	}
	if end > limit {
		return 0, 0, ErrTruncated
	}
	return i, end, nil
}

// skipField returns how long the field at the start of b is, groups
// included, as generated code's skip does.
func skipField(b []byte) (int, error) {
	i, depth := 0, 0
	for i < len(b) {
		tag, next, err := varint(b, i)
		if err != nil {
			return 0, err
		}
		i = next
		switch tag & 7 {
		case wireVarint:
			for shift := uint(0); ; shift += 7 {
				if shift >= 64 {
					return 0, ErrIntOverflow
				}
				if i >= len(b) {
					return 0, ErrTruncated
				}
				i++
				if b[i-1] < 0x80 {
					break
				}
			}
		case wireFixed64:
			i += 8
		case wireBytes:
			n, next, err := varint(b, i)
			if err != nil {
				return 0, err
			}
			if int(n) < 0 {
				return 0, ErrInvalidLength
			}
			i = next + int(n)
		case wireStart:
			depth++
		case wireEnd:
			if depth == 0 {
				return 0, ErrGroup
			}
			depth--
		case wireFixed32:
			i += 4
		default:
			return 0, fmt.Errorf("%w: illegal wire type %d", ErrWireType, tag&7)
		}
		if i < 0 {
			return 0, ErrInvalidLength
		}
		if depth == 0 {
			return i, nil
		}
	}
	return 0, ErrTruncated
}

// skipPast skips the field whose tag starts at data[start:], which must end
// by limit, and returns where the next one starts.
func skipPast(data []byte, start, limit int) (int, error) {
	n, err := skipField(data[start:])
	if err != nil {
		return 0, err
	}
	if start+n < 0 {
		return 0, ErrInvalidLength
	}
	if start+n > limit {
		return 0, ErrTruncated
	}
	return start + n, nil
}

// reserve makes room in *s for want more elements.
func reserve[T any](s *[]T, want int) {
	if cap(*s)-len(*s) < want {
		ns := make([]T, len(*s), len(*s)+want)
		copy(ns, *s)
		*s = ns
	}
}

// count counts the fields of p that are made before they fill, in data,
// the encoding of one message. It stops where it cannot read on; the
// decode that follows says what is wrong there.
func (p *Decoder) count(data []byte, counts *[maxCounted]int32) {
	for i := 0; i < len(data); {
		tag, next, err := varint(data, i)
		if err != nil {
			return
		}
		i = next
		switch tag & 7 {
		case wireVarint:
			if _, i, err = varint(data, i); err != nil {
				return
			}
		case wireFixed64:
			i += 8
		case wireFixed32:
			i += 4
		case wireBytes:
			var end int
			if i < len(data) && data[i] < 0x80 {
				end = i + 1 + int(data[i]) // a one-byte length, read as span reads it
				if end > len(data) {
					return
				}
			} else if _, end, err = span(data, i, len(data)); err != nil {
				return
			}
			if num := tag >> 3; num < uint64(len(p.fields)) {
				if slot := p.fields[num].slot; slot >= 0 {
					counts[slot]++
				}
			}
			i = end
		default:
			return
		}
	}
}

// budget bounds what a message of n bytes has made before it is decoded:
// counting records is not counting what decodes (a payload of empty
// records the decode rejects at its first).
func budget(n int) uintptr { return uintptr(2*n + 64<<10) }

func (p *Decoder) decode(base unsafe.Pointer, data []byte) error {
	var counts [maxCounted]int32
	var made uint32 // counted fields made in this call
	if p.counted > 0 {
		p.count(data, &counts)
	}
	l := len(data)
	for i := 0; i < l; {
		start := i
		tag, next, err := varint(data, i)
		if err != nil {
			return err
		}
		i = next
		num, wire := int32(tag>>3), int(tag&7)
		if wire == wireEnd {
			return fmt.Errorf("%w: %s: end of group for non-group", ErrWireType, p.name)
		}
		if num <= 0 {
			return fmt.Errorf("%w: %s: illegal tag %d (wire type %d)", ErrWireType, p.name, num, tag)
		}
		var f *field
		if int(num) < len(p.fields) {
			f = &p.fields[num]
		}
		if f == nil || f.kind == skip {
			if i, err = skipPast(data, start, l); err != nil {
				return err
			}
			continue
		}
		fp := unsafe.Add(base, f.off)
		switch f.kind {
		case kScalar, kScalarPtr:
			if wire != f.wire {
				return f.wireErr(wire)
			}
			if i, err = f.scalar(fp, data, i); err != nil {
				return err
			}
			continue
		case kScalars:
			if i, err = f.scalars(fp, data, i, wire); err != nil {
				return err
			}
			continue
		}
		if wire != wireBytes {
			return f.wireErr(wire)
		}
		// A length of one byte, as nearly every field has, is read here;
		// span reads the others and reports a bad one.
		var vs, ve int
		if i < l && data[i] < 0x80 && i+1+int(data[i]) <= l {
			vs, ve = i+1, i+1+int(data[i])
		} else if vs, ve, err = span(data, i, l); err != nil {
			return err
		}
		v := data[vs:ve:ve]
		switch f.kind {
		case kString:
			*(*string)(fp) = str(v)
		case kStringPtr:
			s := new(string)
			*s = str(v)
			*(**string)(fp) = s
		case kBytes:
			*(*[]byte)(fp) = v
		case kMessage:
			if err := f.msg.decode(fp, v); err != nil {
				return err
			}
		case kMessagePtr:
			pp := (*unsafe.Pointer)(fp)
			if *pp == nil {
				*pp = f.msg.newValue().UnsafePointer()
			}
			if err := f.msg.decode(*pp, v); err != nil {
				return err
			}
		case kMessages:
			sh := (*sliceHeader)(fp)
			if f.slot >= 0 && made&(1<<f.slot) == 0 {
				made |= 1 << f.slot
				want := min(uintptr(counts[f.slot]), budget(l)/max(f.msg.size, 1)+1)
				if uintptr(sh.cap-sh.len) < want {
					f.grow(fp, int(want))
				}
			}
			if sh.len == sh.cap {
				f.grow(fp, max(sh.len, 4))
			}
			elem := unsafe.Add(sh.data, uintptr(sh.len)*f.msg.size)
			sh.len++
			if err := f.msg.decode(elem, v); err != nil {
				return err
			}
		case kStrings:
			s := (*[]string)(fp)
			if f.slot >= 0 && made&(1<<f.slot) == 0 {
				made |= 1 << f.slot
				reserve(s, min(int(counts[f.slot]), int(budget(l)/16)+1))
			}
			*s = append(*s, str(v))
		case kBytesList:
			s := (*[][]byte)(fp)
			if f.slot >= 0 && made&(1<<f.slot) == 0 {
				made |= 1 << f.slot
				reserve(s, min(int(counts[f.slot]), int(budget(l)/24)+1))
			}
			*s = append(*s, v)
		case kMap:
			hint := 0
			if f.slot >= 0 {
				hint = min(int(counts[f.slot]), l/4+1)
			}
			if err := f.mapEntry(fp, data, vs, ve, hint); err != nil {
				return err
			}
			i = ve
			continue
		}
		i = ve
	}
	return nil
}
