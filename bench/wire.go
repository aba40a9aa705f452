package bench

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The wire formats of the fake apiserver, byte for byte what kube-apiserver
// sends: a protobuf body is the magic "k8s\x00" and a runtime.Unknown whose
// raw field holds the object's message; a protobuf watch stream is a
// sequence of frames, each a 4-byte big-endian length and a
// metav1.WatchEvent whose object is an enveloped message. Objects are kept as
// their bare protobuf message, so a list page or a watch frame is assembled
// without decoding anything.

const (
	contentTypeProtobuf      = "application/vnd.kubernetes.protobuf"
	contentTypeProtobufWatch = "application/vnd.kubernetes.protobuf;stream=watch"
	contentTypeJSON          = "application/json"
)

var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// envelope wraps an object's message in the protobuf envelope.
func envelope(dst []byte, apiVersion, kind string, raw []byte) []byte {
	var tm []byte
	tm = protowire.AppendTag(tm, 1, protowire.BytesType)
	tm = protowire.AppendString(tm, apiVersion)
	tm = protowire.AppendTag(tm, 2, protowire.BytesType)
	tm = protowire.AppendString(tm, kind)
	dst = append(dst, protobufMagic...)
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendBytes(dst, tm)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendBytes(dst, raw)
	dst = protowire.AppendTag(dst, 3, protowire.BytesType)
	dst = protowire.AppendString(dst, "")
	dst = protowire.AppendTag(dst, 4, protowire.BytesType)
	dst = protowire.AppendString(dst, "")
	return dst
}

// protobufList returns an enveloped list (apiVersion, listKind) of the given
// bare messages.
func protobufList(apiVersion, listKind string, lm metav1.ListMeta, items [][]byte) ([]byte, error) {
	meta, err := lm.Marshal()
	if err != nil {
		return nil, err
	}
	size := len(meta) + 16
	for _, it := range items {
		size += len(it) + 8
	}
	list := make([]byte, 0, size)
	list = protowire.AppendTag(list, 1, protowire.BytesType)
	list = protowire.AppendBytes(list, meta)
	for _, it := range items {
		list = protowire.AppendTag(list, 2, protowire.BytesType)
		list = protowire.AppendBytes(list, it)
	}
	return envelope(make([]byte, 0, len(list)+32), apiVersion, listKind, list), nil
}

// protobufFrame appends one watch frame carrying an enveloped object.
func protobufFrame(dst []byte, typ watch.EventType, apiVersion, kind string, raw []byte) ([]byte, error) {
	ev := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: envelope(nil, apiVersion, kind, raw)}}
	msg, err := ev.Marshal()
	if err != nil {
		return nil, err
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(msg)))
	return append(dst, msg...), nil
}

// podJSON turns a bare Pod message into the JSON the apiserver would send.
func podJSON(pb []byte, withType bool) ([]byte, error) {
	var p v1.Pod
	if err := p.Unmarshal(pb); err != nil {
		return nil, err
	}
	if withType {
		p.APIVersion, p.Kind = "v1", "Pod"
	}
	return json.Marshal(&p)
}

// jsonList returns a list of the resource's objects in JSON.
func jsonList(r *fakeRes, lm metav1.ListMeta, items [][]byte) ([]byte, error) {
	meta, err := json.Marshal(&lm)
	if err != nil {
		return nil, err
	}
	out := fmt.Appendf(nil, `{"kind":%q,"apiVersion":%q,"metadata":`, r.Kind+"List", r.APIVersion())
	out = append(out, meta...)
	out = append(out, `,"items":[`...)
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		js, err := r.json(it, false)
		if err != nil {
			return nil, err
		}
		out = append(out, js...)
	}
	return append(out, "]}"...), nil
}

// jsonFrame appends one newline-terminated JSON watch event.
func jsonFrame(dst []byte, typ watch.EventType, obj []byte) ([]byte, error) {
	ev, err := json.Marshal(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: obj}})
	if err != nil {
		return nil, err
	}
	dst = append(dst, ev...)
	return append(dst, '\n'), nil
}

// expiredStatus is the object of the ERROR event a watch from a compacted
// resourceVersion gets (410 Gone, reason Expired).
func expiredStatus(rv, oldest int64) *metav1.Status {
	return &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    410,
		Reason:  metav1.StatusReasonExpired,
		Message: fmt.Sprintf("too old resource version: %d (%d)", rv, oldest),
	}
}

// frameEncoder writes watch frames in one of the two formats.
type frameEncoder struct{ protobuf bool }

// object appends an event of r carrying raw, an object as r keeps it.
func (e frameEncoder) object(dst []byte, typ watch.EventType, r *fakeRes, raw []byte) ([]byte, error) {
	if e.protobuf && !r.JSONOnly {
		return protobufFrame(dst, typ, r.APIVersion(), r.Kind, raw)
	}
	js, err := r.json(raw, true)
	if err != nil {
		return nil, err
	}
	return jsonFrame(dst, typ, js)
}

func (e frameEncoder) bookmark(dst []byte, r *fakeRes, rv int64, initialEnd bool) ([]byte, error) {
	raw, err := r.bookmark(rv, initialEnd)
	if err != nil {
		return nil, err
	}
	return e.object(dst, watch.Bookmark, r, raw)
}

func (e frameEncoder) expired(dst []byte, rv, oldest int64) ([]byte, error) {
	st := expiredStatus(rv, oldest)
	if e.protobuf {
		pb, err := st.Marshal()
		if err != nil {
			return nil, err
		}
		return protobufFrame(dst, watch.Error, "v1", "Status", pb)
	}
	st.APIVersion, st.Kind = "v1", "Status"
	js, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return jsonFrame(dst, watch.Error, js)
}
