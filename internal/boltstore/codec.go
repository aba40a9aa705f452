package boltstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/boltinformer/boltinformer/encryption"
	"github.com/boltinformer/boltinformer/internal/cachefile"
	"github.com/boltinformer/boltinformer/internal/protocodec"
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

	// store is the store's name, bound into every sealed payload.
	store string
	// keys opens sealed payloads; nil when the store has no key file.
	keys *encryption.Keyring
	// seal makes every written payload sealed with keys' current key.
	seal bool
	// lastType is the last apiVersion and kind decoded (see typeStrings).
	lastType atomic.Pointer[[2]string]
	// sizes presizes a protobuf object's slices and maps before it is
	// decoded (protocodec.Presizer); nil when the type has nothing to presize.
	sizes *protocodec.Presizer
	// shared decodes a protobuf object onto a copy of its payload, its
	// strings and byte slices sharing that copy (protocodec.Decoder);
	// nil when the type has no plan or the store copies strings.
	shared *protocodec.Decoder
	// share takes from a new version the fields an old one encodes the
	// same, when the old one is decoded (decodeOld); nil when the type has
	// nothing to share.
	share *protocodec.Sharer
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
		c.sizes = protocodec.PresizerFor(t.Elem())
		c.shared = protocodec.DecoderFor(t.Elem())
		c.share = protocodec.SharerFor(t.Elem())
	default:
		c.id = cachefile.CodecJSON
	}
	return c, nil
}

// encode returns the payload of obj in the store's codec: when the codec
// is protobuf, encoded, the bytes obj was received in, if given (received
// is then true: nothing else holds them), or else obj's encoding built in
// *buf (grown as needed). obj must be of the store's type.
func (c *objectCodec) encode(obj runtime.Object, encoded []byte, buf *[]byte) (id cachefile.Codec, payload []byte, received bool, err error) {
	if reflect.TypeOf(obj) != c.ptr {
		return 0, nil, false, fmt.Errorf("%w: store holds %s, got %T", ErrWrongType, c.name, obj)
	}
	switch c.id {
	case cachefile.CodecProtobuf:
		if encoded != nil {
			return c.id, encoded, true, nil
		}
		m := obj.(protoMessage)
		size := m.Size()
		if cap(*buf) < size {
			*buf = make([]byte, size)
		}
		b := (*buf)[:size]
		n, err := m.MarshalToSizedBuffer(b)
		if err != nil {
			return 0, nil, false, fmt.Errorf("protobuf encode %T: %w", obj, err)
		}
		return c.id, b[size-n:], false, nil
	case cachefile.CodecUnstructuredJSON:
		b, err := json.Marshal(obj.(*unstructured.Unstructured).Object)
		if err != nil {
			return 0, nil, false, fmt.Errorf("json encode %T: %w", obj, err)
		}
		return c.id, b, false, nil
	default:
		b, err := json.Marshal(obj)
		if err != nil {
			return 0, nil, false, fmt.Errorf("json encode %T: %w", obj, err)
		}
		return c.id, b, false, nil
	}
}

// open returns the plaintext, decompressed payload of the record stored
// under key. A sealed payload opens with the key its record names, or is an
// error wrapping ErrEncrypted that names that key; it never reads as
// plaintext. A compressed payload is decompressed into *buf (grown as
// needed), which the caller may reuse once it has decoded the payload.
func (c *objectCodec) open(key string, v *cachefile.RecordView, buf *[]byte) ([]byte, error) {
	payload := v.Payload
	if len(v.KeyID) > 0 {
		plain, err := c.keys.Open(string(v.KeyID), c.store, key, payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEncrypted, err)
		}
		payload = plain
	}
	if v.Compression == cachefile.CompressionNone {
		return payload, nil
	}
	out, err := cachefile.DecompressPayload(v.Compression, payload, *buf)
	if err != nil {
		return nil, err
	}
	if cap(out) > cap(*buf) {
		*buf = out
	}
	return out, nil
}

// payloadBufs holds buffers for plain and compressed payloads. Every
// decoder here copies what it keeps, and EncodeRecord copies the payload
// into the stored bytes, so a buffer is free again once its payload is
// decoded or its record encoded.
var payloadBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledPayload bounds the buffers kept in payloadBufs.
const maxPooledPayload = 1 << 20

// putPayloadBuf returns buf to payloadBufs unless it grew too large to keep.
func putPayloadBuf(buf *[]byte) {
	if cap(*buf) <= maxPooledPayload {
		payloadBufs.Put(buf)
	}
}

// decode builds a new object from a decoded record (the write and verify
// paths, which already hold one).
func (c *objectCodec) decode(key string, r *cachefile.Record) (runtime.Object, error) {
	v := recordView(r)
	obj, _, err := c.decodeView(key, &v)
	return obj, err
}

// recordView is the view of a decoded record, its strings unsafely shared.
func recordView(r *cachefile.Record) cachefile.RecordView {
	return cachefile.RecordView{
		Codec: r.Codec, Compression: r.Compression,
		APIVersion: unsafeBytes(r.APIVersion), Kind: unsafeBytes(r.Kind), KeyID: unsafeBytes(r.KeyID),
		Payload: r.Payload,
	}
}

// shareScratch holds the Sharer's buffers between decodes.
var shareScratch = sync.Pool{New: func() any { return new(protocodec.Scratch) }}

// decodeOld builds the object of r, the version stored under key before
// newObj, whose plain payload is newPlain (nil: decode r in full). The fields
// both payloads encode the same are not decoded: the old object takes the
// new one's (protocodec.Sharer), as a cache's objects are shared and read-only. It
// gives exactly what decode gives when newObj is what newPlain decodes to,
// and falls back to decode whenever it cannot share.
func (c *objectCodec) decodeOld(key string, r *cachefile.Record, newObj interface{}, newPlain []byte) (runtime.Object, error) {
	if c.share == nil || newPlain == nil || r.Codec != cachefile.CodecProtobuf || reflect.TypeOf(newObj) != c.ptr {
		return c.decode(key, r)
	}
	v := recordView(r)
	buf := payloadBufs.Get().(*[]byte)
	defer putPayloadBuf(buf)
	payload, err := c.open(key, &v, buf)
	if err != nil {
		return nil, err
	}
	sc := shareScratch.Get().(*protocodec.Scratch)
	defer putShareScratch(sc)
	if err := c.share.Strip(payload, newPlain, sc); err != nil || len(sc.Shared) == 0 {
		return c.decodePayload(&v, payload)
	}
	ptr, err := c.unmarshalProto(sc.Rest)
	if err == nil {
		err = protocodec.ApplyShared(ptr, reflect.ValueOf(newObj), sc.Shared)
	}
	if err != nil {
		return c.decodePayload(&v, payload) // which says what is wrong with it
	}
	return c.typed(ptr, &v), nil
}

// putShareScratch returns sc to shareScratch unless it grew too large to keep.
func putShareScratch(sc *protocodec.Scratch) {
	if cap(sc.Rest) <= maxPooledPayload {
		shareScratch.Put(sc)
	}
}

// unsafeBytes returns the bytes of s without copying; they must never be written.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// decodeView builds a new object from the record stored under key, and
// returns the size of its plain payload. The payload may alias bbolt's
// memory: every decoder here copies what it keeps.
func (c *objectCodec) decodeView(key string, v *cachefile.RecordView) (runtime.Object, int, error) {
	if c.shared != nil && v.Codec == cachefile.CodecProtobuf && v.Compression != cachefile.CompressionNone {
		// Decompressed into a buffer of its own, which the object shares.
		var own []byte
		payload, err := c.open(key, v, &own)
		if err != nil {
			return nil, 0, err
		}
		ptr, err := c.decodeShared(payload)
		if err != nil {
			return nil, 0, err
		}
		return c.typed(ptr, v), len(payload), nil
	}
	buf := payloadBufs.Get().(*[]byte)
	defer putPayloadBuf(buf)
	payload, err := c.open(key, v, buf)
	if err != nil {
		return nil, 0, err
	}
	obj, err := c.decodePayload(v, payload)
	return obj, len(payload), err
}

func (c *objectCodec) decodePayload(v *cachefile.RecordView, payload []byte) (runtime.Object, error) {
	switch v.Codec {
	case cachefile.CodecProtobuf:
		ptr, err := c.unmarshalProto(payload)
		if err != nil {
			return nil, err
		}
		return c.typed(ptr, v), nil
	case cachefile.CodecUnstructuredJSON:
		if c.id != cachefile.CodecUnstructuredJSON {
			return nil, fmt.Errorf("%w: unstructured record in a store of %s", cachefile.ErrCorruptRecord, c.name)
		}
		content := map[string]interface{}{}
		if err := utiljson.Unmarshal(payload, &content); err != nil {
			return nil, fmt.Errorf("%w: json decode unstructured: %v", cachefile.ErrCorruptRecord, err)
		}
		return &unstructured.Unstructured{Object: content}, nil
	case cachefile.CodecJSON:
		if c.id == cachefile.CodecUnstructuredJSON {
			return nil, fmt.Errorf("%w: typed json record in a store of %s", cachefile.ErrCorruptRecord, c.name)
		}
		obj := c.newObject()
		if err := json.Unmarshal(payload, obj); err != nil {
			return nil, fmt.Errorf("%w: json decode %s: %v", cachefile.ErrCorruptRecord, c.name, err)
		}
		return obj.(runtime.Object), nil
	}
	return nil, fmt.Errorf("%w: unknown codec %d", cachefile.ErrCorruptRecord, v.Codec)
}

// unmarshalProto decodes payload into a new object of the store's type
// and returns the pointer to it: onto a copy of payload that the object's
// strings share (payload may be bbolt's memory or a pooled buffer), or,
// without a shared plan, presized by generated Unmarshal.
func (c *objectCodec) unmarshalProto(payload []byte) (reflect.Value, error) {
	if c.shared != nil {
		return c.decodeShared(bytes.Clone(payload))
	}
	ptr := reflect.New(c.elem)
	obj, ok := ptr.Interface().(protoMessage)
	if !ok {
		return ptr, fmt.Errorf("%w: protobuf record but %s has no protobuf methods", cachefile.ErrCorruptRecord, c.name)
	}
	if c.sizes != nil {
		c.sizes.Presize(ptr.Elem(), payload)
	}
	if err := obj.Unmarshal(payload); err != nil {
		return ptr, fmt.Errorf("%w: protobuf decode %s: %v", cachefile.ErrCorruptRecord, c.name, err)
	}
	return ptr, nil
}

// decodeShared decodes own, which nothing writes again, into a new object
// whose strings and byte slices share it.
func (c *objectCodec) decodeShared(own []byte) (reflect.Value, error) {
	ptr := reflect.New(c.elem)
	if err := c.shared.Decode(ptr.UnsafePointer(), own); err != nil {
		return ptr, fmt.Errorf("%w: protobuf decode %s: %v", cachefile.ErrCorruptRecord, c.name, err)
	}
	return ptr, nil
}

// typed returns the object ptr points to with the TypeMeta of v.
func (c *objectCodec) typed(ptr reflect.Value, v *cachefile.RecordView) runtime.Object {
	ro := ptr.Interface().(runtime.Object)
	apiVersion, kind := c.typeStrings(v.APIVersion, v.Kind)
	setTypeMeta(ro, apiVersion, kind)
	return ro
}

// newObject returns a new zero object of the store's type.
func (c *objectCodec) newObject() interface{} { return reflect.New(c.elem).Interface() }

// typeStrings returns apiVersion and kind as strings, reusing the last
// ones seen: a store's records nearly always carry the same pair, so a read
// does not allocate them.
func (c *objectCodec) typeStrings(apiVersion, kind []byte) (string, string) {
	if t := c.lastType.Load(); t != nil && t[0] == string(apiVersion) && t[1] == string(kind) {
		return t[0], t[1]
	}
	t := &[2]string{string(apiVersion), string(kind)}
	c.lastType.Store(t)
	return t[0], t[1]
}

// setTypeMeta restores the TypeMeta that protobuf payloads do not carry,
// exactly as it was written. A typed object's TypeMeta takes the strings
// as they are: they were written in their canonical form (newRecord), which
// meta.TypeAccessor would parse and rebuild on every read.
func setTypeMeta(obj runtime.Object, apiVersion, kind string) {
	if apiVersion == "" && kind == "" {
		return
	}
	if tm, ok := obj.GetObjectKind().(*metav1.TypeMeta); ok {
		tm.APIVersion, tm.Kind = apiVersion, kind
		return
	}
	if t, err := meta.TypeAccessor(obj); err == nil {
		t.SetAPIVersion(apiVersion)
		t.SetKind(kind)
	}
}

// newRecord builds the envelope of obj stored under key, its payload
// sealed when the store encrypts; index values are filled by the caller.
// encoded, when not nil, is the protobuf encoding obj was received in,
// which a protobuf store writes as it is (Op.Encoded). plain is the payload
// before compression and sealing (what the hot cache sizes a decoded object
// by, and what an old version's decode compares with); received says it is
// encoded, else it lies in *plainBuf. The payload may be built in *plainBuf
// and *packed (grown as needed): the record must be encoded before they are
// reused.
func newRecord(c *objectCodec, key string, obj interface{}, encoded []byte, plainBuf, packed *[]byte) (rec *cachefile.Record, plain []byte, received bool, err error) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, nil, false, fmt.Errorf("%w: %T is not a runtime.Object", ErrWrongType, obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, false, fmt.Errorf("%w: %T: %v", ErrNoMetadata, obj, err)
	}
	id, payload, received, err := c.encode(ro, encoded, plainBuf)
	if err != nil {
		return nil, nil, false, err
	}
	plain = payload
	// Compress before sealing: sealed bytes do not compress.
	compression, payload := cachefile.CompressPayloadTo(*packed, payload)
	if compression != cachefile.CompressionNone && cap(payload) > cap(*packed) {
		*packed = payload // grown; a plain payload is *plainBuf's storage
	}
	var keyID string
	if c.seal {
		if keyID, payload, err = c.keys.Seal(c.store, key, payload); err != nil {
			return nil, nil, false, err
		}
	}
	var apiVersion, kind string
	if t, err := meta.TypeAccessor(obj); err == nil {
		apiVersion, kind = t.GetAPIVersion(), t.GetKind()
	}
	return &cachefile.Record{
		RV:          m.GetResourceVersion(),
		UID:         string(m.GetUID()),
		Codec:       id,
		Compression: compression,
		APIVersion:  apiVersion,
		Kind:        kind,
		KeyID:       keyID,
		Payload:     payload,
	}, plain, received, nil
}
