package boltindexer

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// CodecID names the encoding of a record's payload. It is stored in every
// record, so the values must never be renumbered.
type CodecID uint8

const (
	// CodecProtobuf is the generated protobuf Marshal/Unmarshal of a typed
	// object (every built-in Kubernetes type). TypeMeta is not part of the
	// protobuf message; it lives in the record envelope.
	CodecProtobuf CodecID = 1
	// CodecJSON is encoding/json of a typed object that has no protobuf
	// methods (typically a CRD's Go type).
	CodecJSON CodecID = 2
	// CodecUnstructuredJSON is the JSON of an unstructured object's content;
	// numbers decode as int64 or float64, as the apimachinery JSON decoder does.
	CodecUnstructuredJSON CodecID = 3
)

func (c CodecID) String() string {
	switch c {
	case CodecProtobuf:
		return "protobuf"
	case CodecJSON:
		return "json"
	case CodecUnstructuredJSON:
		return "unstructured-json"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// protoMessage is what the generated protobuf code of Kubernetes API types provides.
type protoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// objectCodec encodes and decodes the objects of one store. It is chosen
// from the store's example object: protobuf when the type has generated
// protobuf methods, unstructured JSON for *unstructured.Unstructured, and
// encoding/json otherwise.
type objectCodec struct {
	// elem is the struct type the store holds (e.g. v1.Pod for *v1.Pod).
	elem reflect.Type
	// ptr is the pointer type (e.g. *v1.Pod).
	ptr  reflect.Type
	id   CodecID
	name string
}

func newObjectCodec(example runtime.Object) (*objectCodec, error) {
	if example == nil {
		return nil, ErrNoObjectType
	}
	t := reflect.TypeOf(example)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: example object must be a pointer to a struct, got %s", ErrNoObjectType, t)
	}
	c := &objectCodec{elem: t.Elem(), ptr: t, name: t.String()}
	switch {
	case t == reflect.TypeOf(&unstructured.Unstructured{}):
		c.id = CodecUnstructuredJSON
	case t.Implements(reflect.TypeOf((*protoMessage)(nil)).Elem()):
		c.id = CodecProtobuf
	default:
		c.id = CodecJSON
	}
	return c, nil
}

// encode returns the payload of obj in the store's codec. obj must be of
// the store's type.
func (c *objectCodec) encode(obj runtime.Object) (CodecID, []byte, error) {
	if reflect.TypeOf(obj) != c.ptr {
		return 0, nil, fmt.Errorf("%w: store holds %s, got %T", ErrWrongType, c.name, obj)
	}
	switch c.id {
	case CodecProtobuf:
		m := obj.(protoMessage)
		buf := make([]byte, m.Size())
		n, err := m.MarshalToSizedBuffer(buf)
		if err != nil {
			return 0, nil, fmt.Errorf("protobuf encode %T: %w", obj, err)
		}
		return c.id, buf[len(buf)-n:], nil
	case CodecUnstructuredJSON:
		b, err := json.Marshal(obj.(*unstructured.Unstructured).Object)
		if err != nil {
			return 0, nil, fmt.Errorf("json encode %T: %w", obj, err)
		}
		return c.id, b, nil
	default:
		b, err := json.Marshal(obj)
		if err != nil {
			return 0, nil, fmt.Errorf("json encode %T: %w", obj, err)
		}
		return c.id, b, nil
	}
}

// decode builds a new object from a record. The payload may alias bbolt's
// memory: every decoder here copies what it keeps.
func (c *objectCodec) decode(r *record) (runtime.Object, error) {
	switch r.Codec {
	case CodecProtobuf:
		obj, ok := reflect.New(c.elem).Interface().(protoMessage)
		if !ok {
			return nil, fmt.Errorf("%w: protobuf record but %s has no protobuf methods", ErrCorruptRecord, c.name)
		}
		if err := obj.Unmarshal(r.Payload); err != nil {
			return nil, fmt.Errorf("%w: protobuf decode %s: %v", ErrCorruptRecord, c.name, err)
		}
		ro := obj.(runtime.Object)
		setTypeMeta(ro, r.APIVersion, r.Kind)
		return ro, nil
	case CodecUnstructuredJSON:
		if c.id != CodecUnstructuredJSON {
			return nil, fmt.Errorf("%w: unstructured record in a store of %s", ErrCorruptRecord, c.name)
		}
		content := map[string]interface{}{}
		if err := utiljson.Unmarshal(r.Payload, &content); err != nil {
			return nil, fmt.Errorf("%w: json decode unstructured: %v", ErrCorruptRecord, err)
		}
		return &unstructured.Unstructured{Object: content}, nil
	case CodecJSON:
		if c.id == CodecUnstructuredJSON {
			return nil, fmt.Errorf("%w: typed json record in a store of %s", ErrCorruptRecord, c.name)
		}
		obj := reflect.New(c.elem).Interface()
		if err := json.Unmarshal(r.Payload, obj); err != nil {
			return nil, fmt.Errorf("%w: json decode %s: %v", ErrCorruptRecord, c.name, err)
		}
		return obj.(runtime.Object), nil
	}
	return nil, fmt.Errorf("%w: unknown codec %d", ErrCorruptRecord, r.Codec)
}

// setTypeMeta restores the TypeMeta that protobuf payloads do not carry,
// exactly as it was written.
func setTypeMeta(obj runtime.Object, apiVersion, kind string) {
	if apiVersion == "" && kind == "" {
		return
	}
	if t, err := meta.TypeAccessor(obj); err == nil {
		t.SetAPIVersion(apiVersion)
		t.SetKind(kind)
	}
}

// RecordCodec encodes objects into stored records and decodes them back,
// exactly as a store of the example's type does (without index values).
// Tools that read records directly (cachectl, benchmarks) use it.
type RecordCodec struct{ c *objectCodec }

// NewRecordCodec returns the codec a store of example's type uses.
func NewRecordCodec(example runtime.Object) (*RecordCodec, error) {
	c, err := newObjectCodec(example)
	if err != nil {
		return nil, err
	}
	return &RecordCodec{c: c}, nil
}

// ID is the payload encoding the codec writes.
func (rc *RecordCodec) ID() CodecID { return rc.c.id }

// Encode returns the record of obj.
func (rc *RecordCodec) Encode(obj runtime.Object) ([]byte, error) {
	rec, err := newRecord(rc.c, obj)
	if err != nil {
		return nil, err
	}
	return encodeRecord(rec)
}

// Decode returns a new object decoded from a record.
func (rc *RecordCodec) Decode(data []byte) (runtime.Object, error) {
	rec, err := decodeRecord(data)
	if err != nil {
		return nil, err
	}
	return rc.c.decode(rec)
}
