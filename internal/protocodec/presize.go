package protocodec

import (
	"encoding/binary"
	"reflect"
	"sync"
)

// The generated protobuf code of Kubernetes API types decodes a repeated
// field by appending one element at a time (a Pod's slices of containers,
// volumes and conditions grow 1, 2, 4, 8, each step a copy; BenchmarkReadPath's
// Get/decode, in internal/boltstore, measures what Pod.Unmarshal
// allocates). A Presizer counts, in one pass over the payload, how many
// elements each such field will get and makes its slice or map that large
// before Unmarshal runs, which then appends without growing or copying.
//
// It reaches the fields Unmarshal fills in place: those of the object, of
// its embedded messages (ObjectMeta, PodSpec, PodStatus) and of its
// pointer messages (Affinity, PodSecurityContext), recursively. An element
// of a repeated message field (a Container) is out of reach: Unmarshal
// appends it as a new zero value. Presizing only sets capacities, and only
// of fields the payload has, so the decoded object is the same (the
// differential test compares them); a payload it cannot parse is left to
// Unmarshal to reject.

// Presizer is how to presize one message type: its fields by protobuf
// field number (only those of wire type bytes that it counts or descends
// into).
type Presizer struct {
	fields []sizeField // indexed by field number; kind 0 for the others
	counts int         // how many fields are counted
}

type sizeKind uint8

const (
	sizeNone    sizeKind = iota
	sizeCount            // a repeated field or a map: counted
	sizeEmbed            // a message held by value: descended into
	sizePointer          // a message held by pointer: made and descended into
)

type sizeField struct {
	kind  sizeKind
	index int          // the struct field
	typ   reflect.Type // the field's type
	slot  int          // counted fields: the counter's index
	sub   *Presizer    // embedded and pointer messages
}

var (
	// presizers caches the presizers by struct type; nil means the type
	// has nothing to presize.
	presizers   sync.Map // reflect.Type -> *Presizer
	presizersMu sync.Mutex
)

// PresizerFor returns the presizer of struct type t, or nil when nothing in it
// can be presized.
func PresizerFor(t reflect.Type) *Presizer {
	if p, ok := presizers.Load(t); ok {
		return p.(*Presizer)
	}
	presizersMu.Lock()
	defer presizersMu.Unlock()
	if p, ok := presizers.Load(t); ok {
		return p.(*Presizer)
	}
	building := map[reflect.Type]*Presizer{}
	root := buildPresizer(t, building)
	prunePresizers(building)
	for typ, p := range building {
		if p.empty() {
			p = nil
		}
		presizers.Store(typ, p)
	}
	if root.empty() {
		return nil
	}
	return root
}

// buildPlan builds the plan of t and of every message type it reaches,
// into building (which also breaks the cycles of recursive types).
func buildPresizer(t reflect.Type, building map[reflect.Type]*Presizer) *Presizer {
	if p, ok := building[t]; ok {
		return p
	}
	if p, ok := presizers.Load(t); ok && p.(*Presizer) != nil {
		return p.(*Presizer)
	}
	p := &Presizer{}
	building[t] = p
	for _, pf := range bytesFields(t) {
		f := sizeField{index: pf.index, typ: pf.typ}
		switch {
		case pf.rep && (pf.typ.Kind() == reflect.Slice || pf.typ.Kind() == reflect.Map):
			if p.counts == maxCounted {
				continue
			}
			f.kind, f.slot = sizeCount, p.counts
			p.counts++
		case !pf.rep && pf.kind == bytesMessage:
			f.kind, f.sub = sizeEmbed, buildPresizer(pf.typ, building)
		case !pf.rep && pf.kind == bytesMessagePtr:
			f.kind, f.sub = sizePointer, buildPresizer(pf.typ.Elem(), building)
		default:
			continue
		}
		p.fields = byNumber(p.fields, pf.num, f)
	}
	return p
}

// prunePlans drops the fields that descend into plans with nothing to
// presize, until none is left (recursive types make this a fixpoint).
func prunePresizers(plans map[reflect.Type]*Presizer) {
	for changed := true; changed; {
		changed = false
		for _, p := range plans {
			for i := range p.fields {
				f := &p.fields[i]
				if (f.kind == sizeEmbed || f.kind == sizePointer) && f.sub.empty() {
					*f = sizeField{}
					changed = true
				}
			}
		}
	}
}

// empty reports whether p presizes nothing.
func (p *Presizer) empty() bool {
	if p == nil {
		return true
	}
	for _, f := range p.fields {
		if f.kind != sizeNone {
			return false
		}
	}
	return true
}

// Presize counts the fields of p in data, the protobuf encoding of the
// struct v (addressable), makes v's counted slices and maps that large
// where they are still nil, and descends into its messages. It stops at
// the first thing it cannot parse.
//
// What it makes is bounded by the payload's size (budgetPerByte, plus
// budgetMin): a count is of records, not of what Unmarshal keeps, so a
// payload of empty records that Unmarshal rejects, or of one map key
// repeated, counts far more than it decodes to. Past the bound, a slice or
// map is made smaller, or not at all, and Unmarshal grows it.
func (p *Presizer) Presize(v reflect.Value, data []byte) {
	budget := budgetPerByte*int64(len(data)) + budgetMin
	p.presize(v, data, &budget)
}

// budgetPerByte and budgetMin bound the bytes Presize makes for a
// payload. A decoded Pod takes about four bytes of heap per byte of its
// encoding, of which its presized slices and maps are about one; a small
// object's few elements can weigh a hundred times their encoding (a
// Container of one name: 5 bytes, 400 decoded), which budgetMin covers.
const (
	budgetPerByte = 2
	budgetMin     = 64 << 10
)

func (p *Presizer) presize(v reflect.Value, data []byte, budget *int64) {
	var counts [maxCounted]int
	for len(data) > 0 {
		key, n := binary.Uvarint(data)
		if n <= 0 {
			break
		}
		data = data[n:]
		num, wire := key>>3, key&7
		switch wire {
		case 0:
			if _, n = binary.Uvarint(data); n <= 0 {
				data = nil
				continue
			}
			data = data[n:]
			continue
		case 1, 5:
			size := 8
			if wire == 5 {
				size = 4
			}
			if len(data) < size {
				data = nil
				continue
			}
			data = data[size:]
			continue
		case 2:
		default:
			data = nil
			continue
		}
		l, n := binary.Uvarint(data)
		if n <= 0 || l > uint64(len(data)-n) {
			break
		}
		payload := data[n : n+int(l)]
		data = data[n+int(l):]
		if num >= uint64(len(p.fields)) {
			continue
		}
		switch f := &p.fields[num]; f.kind {
		case sizeCount:
			counts[f.slot]++
		case sizeEmbed:
			f.sub.presize(v.Field(f.index), payload, budget)
		case sizePointer:
			fv := v.Field(f.index)
			if fv.IsNil() {
				fv.Set(reflect.New(f.typ.Elem()))
			}
			f.sub.presize(fv.Elem(), payload, budget)
		}
	}
	if p.counts == 0 {
		return
	}
	for i := range p.fields {
		f := &p.fields[i]
		if f.kind != sizeCount || counts[f.slot] == 0 {
			continue
		}
		fv := v.Field(f.index)
		if !fv.IsNil() {
			continue
		}
		n := int64(counts[f.slot])
		each := int64(f.typ.Elem().Size())
		if f.typ.Kind() == reflect.Map {
			// A map made for n entries takes up to 2.5 times their keys
			// and values (its tables have a power of two of slots, 7/8
			// full at most, each with a control byte).
			each = (each + int64(f.typ.Key().Size()) + 1) * 5 / 2
		}
		if n*each > *budget {
			if n = *budget / max(each, 1); n == 0 {
				continue
			}
		}
		*budget -= n * each
		if f.typ.Kind() == reflect.Map {
			fv.Set(reflect.MakeMapWithSize(f.typ, int(n)))
		} else {
			fv.Set(reflect.MakeSlice(f.typ, 0, int(n)))
		}
	}
}
