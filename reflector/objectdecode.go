package reflector

import (
	"bytes"
	"reflect"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/boltinformer/boltinformer/internal/protocodec"
)

// protobufMagic starts every object the apiserver encodes in protobuf: a
// runtime.Unknown envelope (type meta, then the object's own encoding).
var protobufMagic = []byte{'k', '8', 's', 0}

// protoUnmarshaler is what the protobuf serializer decodes into.
type protoUnmarshaler interface {
	Reset()
	Unmarshal([]byte) error
}

// objectDecoder decodes the objects of one watch stream's events.
type objectDecoder struct {
	scheme *runtime.Scheme
	// codec decodes what decode does not: JSON, and protobuf it cannot
	// decode itself, which codec then rejects with client-go's error.
	codec runtime.Decoder
	// copyStrings decodes protobuf with generated Unmarshal, which copies
	// each string, instead of onto raw (ListWatchOptions.CopyStrings).
	copyStrings bool
}

// decode returns the object raw encodes, as the codec would decode it, and
// for a protobuf object, the object's own encoding (the envelope's
// payload, a part of raw). A protobuf object of a type the scheme knows is
// decoded here, onto raw, its strings sharing it (protocodec.Decoder;
// raw must never be written again), or with copyStrings by generated
// Unmarshal, its slices and maps presized (protocodec.Presizer): the codec's
// decode gives the same object.
func (d objectDecoder) decode(raw []byte) (runtime.Object, []byte, error) {
	env, ok := openEnvelope(raw)
	if !ok || env.contentEncoding != "" || (env.contentType != "" && env.contentType != runtime.ContentTypeProtobuf) {
		obj, err := runtime.Decode(d.codec, raw)
		return obj, nil, err
	}
	gvk := schema.FromAPIVersionAndKind(env.apiVersion, env.kind)
	var obj runtime.Object
	if gvk.Kind != "" && gvk.Version != "" {
		obj, _ = d.scheme.New(gvk)
	}
	// What the protobuf serializer decodes into (its unmarshaler); Reset
	// is not called on the new object, which is zero already.
	m, ok := obj.(protoUnmarshaler)
	if !ok || reflect.TypeOf(obj).Kind() != reflect.Pointer {
		obj, err := runtime.Decode(d.codec, raw)
		return obj, nil, err
	}
	ptr := reflect.ValueOf(obj)
	if !d.copyStrings {
		if plan := protocodec.DecoderFor(ptr.Type().Elem()); plan != nil {
			if err := plan.Decode(ptr.UnsafePointer(), env.payload); err == nil {
				return obj, env.payload, nil
			}
			// Generated Unmarshal fails where the Decoder does; its
			// error is the one client-go's watch gives.
			obj, _ = d.scheme.New(gvk)
			ptr, m = reflect.ValueOf(obj), obj.(protoUnmarshaler)
		}
	}
	if plan := protocodec.PresizerFor(ptr.Type().Elem()); plan != nil {
		plan.Presize(ptr.Elem(), env.payload)
	}
	if err := m.Unmarshal(env.payload); err != nil {
		return nil, nil, err
	}
	return obj, env.payload, nil
}

// envelope is a protobuf object's runtime.Unknown envelope, read in place:
// payload is a part of the bytes read, not a copy (runtime.Unknown's
// Unmarshal copies it: the object's whole encoding).
type envelope struct {
	apiVersion, kind             string
	payload                      []byte
	contentEncoding, contentType string
}

// Field numbers of runtime.Unknown and of its TypeMeta.
const (
	unknownTypeMeta        = 1
	unknownRaw             = 2
	unknownContentEncoding = 3
	unknownContentType     = 4
	typeMetaAPIVersion     = 1
	typeMetaKind           = 2
)

// openEnvelope reads raw, an object the apiserver encoded in protobuf (the
// magic, then a runtime.Unknown). It reports false for anything else, or
// for fields of an unexpected wire type: the codec then decodes it, or
// reports why not.
func openEnvelope(raw []byte) (envelope, bool) {
	var env envelope
	if !bytes.HasPrefix(raw, protobufMagic) {
		return env, false
	}
	ok := eachBytesField(raw[len(protobufMagic):], func(num protowire.Number, v []byte) bool {
		switch num {
		case unknownTypeMeta:
			return eachBytesField(v, func(num protowire.Number, v []byte) bool {
				switch num {
				case typeMetaAPIVersion:
					env.apiVersion = string(v)
				case typeMetaKind:
					env.kind = string(v)
				}
				return true
			})
		case unknownRaw:
			env.payload = v
		case unknownContentEncoding:
			env.contentEncoding = string(v)
		case unknownContentType:
			env.contentType = string(v)
		}
		return true
	})
	return env, ok
}

// eachBytesField calls fn with each field of b, a protobuf message whose
// fields are all of wire type bytes, in order, while fn returns true. It
// reports false for another wire type, a field cut short, or fn's false.
func eachBytesField(b []byte, fn func(num protowire.Number, v []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return false
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 || !fn(num, v) {
			return false
		}
		b = b[n+m:]
	}
	return true
}
