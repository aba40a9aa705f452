package boltindexer

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/boltinformer/boltinformer/cachefile"
)

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
	id   cachefile.Codec
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
		c.id = cachefile.CodecUnstructuredJSON
	case t.Implements(reflect.TypeOf((*protoMessage)(nil)).Elem()):
		c.id = cachefile.CodecProtobuf
	default:
		c.id = cachefile.CodecJSON
	}
	return c, nil
}

// encode returns the payload of obj in the store's codec. obj must be of
// the store's type.
func (c *objectCodec) encode(obj runtime.Object) (cachefile.Codec, []byte, error) {
	if reflect.TypeOf(obj) != c.ptr {
		return 0, nil, fmt.Errorf("%w: store holds %s, got %T", ErrWrongType, c.name, obj)
	}
	switch c.id {
	case cachefile.CodecProtobuf:
		m := obj.(protoMessage)
		buf := make([]byte, m.Size())
		n, err := m.MarshalToSizedBuffer(buf)
		if err != nil {
			return 0, nil, fmt.Errorf("protobuf encode %T: %w", obj, err)
		}
		return c.id, buf[len(buf)-n:], nil
	case cachefile.CodecUnstructuredJSON:
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
func (c *objectCodec) decode(r *cachefile.Record) (runtime.Object, error) {
	if r.KeyID != "" {
		return nil, fmt.Errorf("%w: the payload is sealed with key %q and this store has no key", ErrEncrypted, r.KeyID)
	}
	switch r.Codec {
	case cachefile.CodecProtobuf:
		obj, ok := reflect.New(c.elem).Interface().(protoMessage)
		if !ok {
			return nil, fmt.Errorf("%w: protobuf record but %s has no protobuf methods", cachefile.ErrCorruptRecord, c.name)
		}
		if err := obj.Unmarshal(r.Payload); err != nil {
			return nil, fmt.Errorf("%w: protobuf decode %s: %v", cachefile.ErrCorruptRecord, c.name, err)
		}
		ro := obj.(runtime.Object)
		setTypeMeta(ro, r.APIVersion, r.Kind)
		return ro, nil
	case cachefile.CodecUnstructuredJSON:
		if c.id != cachefile.CodecUnstructuredJSON {
			return nil, fmt.Errorf("%w: unstructured record in a store of %s", cachefile.ErrCorruptRecord, c.name)
		}
		content := map[string]interface{}{}
		if err := utiljson.Unmarshal(r.Payload, &content); err != nil {
			return nil, fmt.Errorf("%w: json decode unstructured: %v", cachefile.ErrCorruptRecord, err)
		}
		return &unstructured.Unstructured{Object: content}, nil
	case cachefile.CodecJSON:
		if c.id == cachefile.CodecUnstructuredJSON {
			return nil, fmt.Errorf("%w: typed json record in a store of %s", cachefile.ErrCorruptRecord, c.name)
		}
		obj := reflect.New(c.elem).Interface()
		if err := json.Unmarshal(r.Payload, obj); err != nil {
			return nil, fmt.Errorf("%w: json decode %s: %v", cachefile.ErrCorruptRecord, c.name, err)
		}
		return obj.(runtime.Object), nil
	}
	return nil, fmt.Errorf("%w: unknown codec %d", cachefile.ErrCorruptRecord, r.Codec)
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

// newRecord builds the envelope of obj; index values are filled by the caller.
func newRecord(c *objectCodec, obj interface{}) (*cachefile.Record, error) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("%w: %T is not a runtime.Object", ErrWrongType, obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: %T: %v", ErrNoMetadata, obj, err)
	}
	id, payload, err := c.encode(ro)
	if err != nil {
		return nil, err
	}
	var apiVersion, kind string
	if t, err := meta.TypeAccessor(obj); err == nil {
		apiVersion, kind = t.GetAPIVersion(), t.GetKind()
	}
	return &cachefile.Record{
		RV:         m.GetResourceVersion(),
		UID:        string(m.GetUID()),
		Codec:      id,
		APIVersion: apiVersion,
		Kind:       kind,
		Payload:    payload,
	}, nil
}
