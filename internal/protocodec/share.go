package protocodec

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"reflect"
	"sync"
)

// An update rarely rewrites a whole object: a kubelet status update leaves
// a Pod's spec, labels and owners as they were. Decoding the stored version
// in full rebuilds all of them (BenchmarkReadPath's Get/decode, in
// internal/boltstore, measures what generated Pod.Unmarshal allocates).
// A Sharer compares the two encodings field by field, strips from the old
// one the fields the new one encodes identically, and after the rest is
// decoded sets those fields to the new object's values: the old and the
// new object then share that memory, as a cache's objects are shared and
// read-only. Bytes equal field by field decode to equal values, so the old
// object is exactly (reflect.DeepEqual) what a full decode gives, provided
// the new object is exactly what its encoding decodes to (the test
// compares both on every built-in type).
//
// It compares the fields of the object and, where a message field
// differs (metadata, status), the fields of that message: ShareDepth
// levels in all. A slice of messages that differs (a Pod's conditions) is
// compared element by element when both versions have as many: the equal
// elements are the new slice's, the others decoded.

// ShareDepth is how many message levels a Sharer compares: the object's
// fields and those of its messages.
const ShareDepth = 2

// Sharer is how to share the fields of one message type: its fields of
// wire type bytes by protobuf field number.
type Sharer struct {
	fields []shareField
}

type shareKind uint8

const (
	shareNone     shareKind = iota // decoded from the old bytes
	shareWhole                     // a string, slice or map: shared whole
	shareElements                  // a slice of messages: shared whole, or element by element
	shareEmbed                     // a message held by value: shared, or compared field by field
	sharePointer                   // a message held by pointer: shared, or compared field by field
)

type shareField struct {
	kind  shareKind
	index int     // the struct field
	sub   *Sharer // embedded and pointer messages
}

// sharers caches the sharers by struct type; nil means nothing to share.
var sharers sync.Map // reflect.Type -> *Sharer

// SharerFor returns the sharer of struct type t, or nil when t has no field it
// can share.
func SharerFor(t reflect.Type) *Sharer {
	if p, ok := sharers.Load(t); ok {
		return p.(*Sharer)
	}
	// Building reads t only: two callers may build at once, and the first
	// plan stored is kept.
	p := buildSharer(t, map[reflect.Type]*Sharer{})
	if len(p.fields) == 0 {
		p = nil
	}
	kept, _ := sharers.LoadOrStore(t, p)
	return kept.(*Sharer)
}

func buildSharer(t reflect.Type, building map[reflect.Type]*Sharer) *Sharer {
	if p, ok := building[t]; ok {
		return p
	}
	p := &Sharer{}
	building[t] = p
	for _, pf := range bytesFields(t) {
		f := shareField{index: pf.index}
		switch {
		case pf.kind == bytesMessage:
			f.kind, f.sub = shareEmbed, buildSharer(pf.typ, building)
		case pf.kind == bytesMessagePtr:
			f.kind, f.sub = sharePointer, buildSharer(pf.typ.Elem(), building)
		case pf.kind == bytesMessages:
			f.kind = shareElements
		case pf.typ.Kind() == reflect.String || pf.typ.Kind() == reflect.Slice || pf.typ.Kind() == reflect.Map:
			f.kind = shareWhole
		default:
			continue
		}
		p.fields = byNumber(p.fields, pf.num, f)
	}
	return p
}

// Shared is a field of the old object that takes the new object's value:
// the struct field indexes from the object down, through messages held by
// value or by pointer. For a slice of messages shared element by element,
// mask has a bit set for each of its count elements taken from the new
// slice; the others were decoded, in order.
type Shared struct {
	depth int
	path  [ShareDepth]int
	mask  uint64
	count int
}

// Depth is how many message levels down the field lies: 1 for the
// object's own fields.
func (s Shared) Depth() int { return s.depth }

// Partial reports whether the field is a slice shared element by element.
func (s Shared) Partial() bool { return s.mask != 0 }

// Scratch holds the buffers of one Strip; reuse it for the next (not
// concurrently).
type Scratch struct {
	Rest   []byte
	Shared []Shared
	levels [ShareDepth]level
}

// level holds the buffers of one message level: the spans of both
// encodings and, below the object, the rewritten bytes.
type level struct {
	old, new []fieldSpan
	out      []byte
}

// fieldSpan is where one field's occurrences lie in a message's bytes: from the
// first's key to the last's end. runs counts the stretches they make; a
// field whose occurrences are interleaved with others' is never shared.
type fieldSpan struct {
	start, end int
	count      int
	runs       int
	valStart   int // the first occurrence's value (messages compared field by field)
}

// Strip compares old and new, the encodings of two versions of one message
// of the sharer's type, and returns in s.Rest the old encoding without the
// fields new encodes identically, and in s.Shared those fields. Decode
// s.Rest, then ApplyShared s.Shared. With no field shared, s.Shared is empty:
// decode old itself.
func (p *Sharer) Strip(old, new []byte, s *Scratch) error {
	s.Shared = s.Shared[:0]
	rest, stripped, err := p.strip(old, new, s, 0, [ShareDepth]int{}, s.Rest[:0])
	s.Rest = rest
	if err != nil || !stripped {
		s.Rest, s.Shared = s.Rest[:0], s.Shared[:0]
	}
	return err
}

// decision is what strip does with one field.
type decision uint8

const (
	keepBytes  decision = iota // kept in the bytes to decode
	shareValue                 // stripped: the new object's value is taken
	descend                    // a message compared field by field
	some                       // a slice whose equal elements are stripped
)

// equalElements compares two runs of one repeated field, occurrence by
// occurrence (both have as many), and returns a bit set of those equal.
func equalElements(old, new []byte) (uint64, error) {
	var mask uint64
	for i := 0; len(old) > 0; i++ {
		_, _, eo, err := firstField(old)
		if err != nil {
			return 0, err
		}
		_, _, en, err := firstField(new)
		if err != nil {
			return 0, err
		}
		if bytes.Equal(old[:eo], new[:en]) {
			mask |= 1 << i
		}
		old, new = old[eo:], new[en:]
	}
	return mask, nil
}

// maxDecisions bounds the field numbers of a message Strip compares; a
// message with larger ones is decoded whole.
const maxDecisions = 64

// strip appends to out the bytes of old without the fields new encodes
// identically, records those in s.Shared, and reports whether it stripped
// any. path holds the struct field indexes down to this message.
func (p *Sharer) strip(old, new []byte, s *Scratch, depth int, path [ShareDepth]int, out []byte) ([]byte, bool, error) {
	if len(p.fields) > maxDecisions {
		return out, false, nil
	}
	lv := &s.levels[depth]
	var err error
	if lv.old, err = p.spans(old, lv.old); err != nil {
		return out, false, err
	}
	if lv.new, err = p.spans(new, lv.new); err != nil {
		return out, false, err
	}
	var decisions [maxDecisions]decision
	var masks [maxDecisions]uint64 // some: the elements stripped
	stripped := false
	for num := range p.fields {
		f := &p.fields[num]
		o, n := lv.old[num], lv.new[num]
		switch {
		case f.kind == shareNone || o.count == 0 || n.count == 0:
		case o.runs == 1 && n.runs == 1 && bytes.Equal(old[o.start:o.end], new[n.start:n.end]):
			decisions[num] = shareValue
			path[depth] = f.index
			s.Shared = append(s.Shared, Shared{depth: depth + 1, path: path})
			stripped = true
		case (f.kind == shareEmbed || f.kind == sharePointer) && o.count == 1 && n.count == 1 && depth+1 < ShareDepth:
			decisions[num] = descend
		case f.kind == shareElements && o.runs == 1 && n.runs == 1 && o.count == n.count && o.count <= 64:
			mask, err := equalElements(old[o.start:o.end], new[n.start:n.end])
			if err != nil {
				return out, false, err
			}
			if mask != 0 {
				decisions[num], masks[num] = some, mask
				path[depth] = f.index
				s.Shared = append(s.Shared, Shared{depth: depth + 1, path: path, mask: mask, count: o.count})
				stripped = true
			}
		}
	}
	var seen [maxDecisions]int // some: the elements met so far
	// Copy old's fields in order, without the shared ones; a message
	// compared field by field is copied stripped in turn.
	mark := len(out)
	for pos := 0; pos < len(old); {
		key, n, end, err := firstField(old[pos:])
		if err != nil {
			return out[:mark], false, err
		}
		field := old[pos : pos+end]
		pos += end
		num := key >> 3
		if num >= uint64(len(p.fields)) || decisions[num] == keepBytes {
			out = append(out, field...)
			continue
		}
		if decisions[num] == shareValue {
			continue
		}
		if decisions[num] == some {
			if masks[num]>>seen[num]&1 == 0 {
				out = append(out, field...)
			}
			seen[num]++
			continue
		}
		f := &p.fields[num]
		o, nw := lv.old[num], lv.new[num]
		path[depth] = f.index
		next := &s.levels[depth+1]
		sub, subStripped, err := f.sub.strip(old[o.valStart:o.end], new[nw.valStart:nw.end], s, depth+1, path, next.out[:0])
		next.out = sub
		if err != nil {
			return out[:mark], false, err
		}
		if !subStripped {
			out = append(out, field...)
			continue
		}
		stripped = true
		out = append(out, field[:n]...)
		out = binary.AppendUvarint(out, uint64(len(sub)))
		out = append(out, sub...)
	}
	if !stripped {
		return out[:mark], false, nil
	}
	return out, true, nil
}

// spans returns where each field of the plan lies in data, in buf (reused).
func (p *Sharer) spans(data []byte, buf []fieldSpan) ([]fieldSpan, error) {
	if cap(buf) < len(p.fields) {
		buf = make([]fieldSpan, len(p.fields))
	}
	buf = buf[:len(p.fields)]
	clear(buf)
	last := -1
	pos := 0
	for pos < len(data) {
		key, n, end, err := firstField(data[pos:])
		if err != nil {
			return buf, err
		}
		num := key >> 3
		if num < uint64(len(buf)) && p.fields[num].kind != shareNone {
			if key&7 != 2 {
				return buf, ErrNotProtobuf
			}
			sp := &buf[num]
			if sp.count == 0 {
				sp.start = pos
				_, ln := binary.Uvarint(data[pos+n:])
				sp.valStart = pos + n + ln
			}
			if last != int(num) {
				sp.runs++
			}
			sp.count++
			sp.end = pos + end
		}
		last = int(num)
		pos += end
	}
	return buf, nil
}

// firstField parses the key of the field data starts with and returns it,
// its length and the field's.
func firstField(data []byte) (key uint64, keyLen, end int, err error) {
	key, keyLen = binary.Uvarint(data)
	if keyLen <= 0 {
		return 0, 0, 0, ErrNotProtobuf
	}
	end, err = fieldEnd(data, keyLen, key&7)
	return key, keyLen, end, err
}

// fieldEnd returns the length of the field that starts data, whose key
// (keyLen bytes) has wire type wire.
func fieldEnd(data []byte, keyLen int, wire uint64) (int, error) {
	switch wire {
	case 0:
		_, n := binary.Uvarint(data[keyLen:])
		if n <= 0 {
			return 0, ErrNotProtobuf
		}
		return keyLen + n, nil
	case 1:
		if len(data) < keyLen+8 {
			return 0, ErrNotProtobuf
		}
		return keyLen + 8, nil
	case 5:
		if len(data) < keyLen+4 {
			return 0, ErrNotProtobuf
		}
		return keyLen + 4, nil
	case 2:
		l, n := binary.Uvarint(data[keyLen:])
		if n <= 0 || l > uint64(len(data)-keyLen-n) {
			return 0, ErrNotProtobuf
		}
		return keyLen + n + int(l), nil
	}
	return 0, ErrNotProtobuf
}

// ApplyShared sets the fields of old (a pointer to the sharer's struct, decoded
// from Strip's Rest) listed in shared to new's values (the same type, the
// object decoded from the new encoding); a slice shared element by element
// gets the new slice's equal elements in their places. It fails, leaving
// old partly set, when new is not what its encoding decodes to (a message
// shared field by field is missing, a slice has another length): decode
// old in full then.
func ApplyShared(old, new reflect.Value, shared []Shared) error {
	for _, sh := range shared {
		o, n := old.Elem(), new.Elem()
		for d := 0; d < sh.depth-1; d++ {
			o, n = o.Field(sh.path[d]), n.Field(sh.path[d])
			if o.Kind() == reflect.Pointer {
				if o.IsNil() || n.IsNil() {
					return errNoMessage
				}
				o, n = o.Elem(), n.Elem()
			}
		}
		of, nf := o.Field(sh.path[sh.depth-1]), n.Field(sh.path[sh.depth-1])
		if sh.mask == 0 {
			of.Set(nf)
			continue
		}
		if err := mergeElements(of, nf, sh.mask, sh.count); err != nil {
			return err
		}
	}
	return nil
}

// mergeElements sets old, a slice of the elements decoded, to count
// elements: the new slice's where mask has a bit set, the decoded ones, in
// order, elsewhere.
func mergeElements(old, new reflect.Value, mask uint64, count int) error {
	if new.Len() != count || old.Len() != count-bits.OnesCount64(mask) {
		return errShape
	}
	merged := reflect.MakeSlice(old.Type(), count, count)
	for i, j := 0, 0; i < count; i++ {
		if mask>>i&1 == 1 {
			merged.Index(i).Set(new.Index(i))
			continue
		}
		merged.Index(i).Set(old.Index(j))
		j++
	}
	old.Set(merged)
	return nil
}
