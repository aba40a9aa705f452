package protocodec

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestParseTag(t *testing.T) {
	for _, c := range []struct {
		tag  string
		want tag
		ok   bool
	}{
		{"bytes,1,opt,name=metadata", tag{wire: "bytes", num: 1}, true},
		{"bytes,2,rep,name=containers", tag{wire: "bytes", num: 2, rep: true}, true},
		{"varint,3,opt,name=replicas", tag{wire: "varint", num: 3}, true},
		{"bytes,1024,opt,name=last", tag{wire: "bytes", num: 1024}, true},
		{"bytes,1025,opt,name=past", tag{}, false},
		{"bytes,x,opt,name=bad", tag{}, false},
		{"bytes,0,opt,name=zero", tag{}, false},
		{"bytes,4", tag{}, false},
		{"", tag{}, false},
	} {
		got, ok := parseTag(c.tag)
		if got != c.want || ok != c.ok {
			t.Errorf("parseTag(%q) = %+v, %v; want %+v, %v", c.tag, got, ok, c.want, c.ok)
		}
	}
}

// TestBytesFieldsOfPodSpec: a PodSpec's fields of wire type bytes, each
// with its number and kind as the generated code has them.
func TestBytesFieldsOfPodSpec(t *testing.T) {
	byName := map[string]bytesField{}
	typ := reflect.TypeFor[v1.PodSpec]()
	for _, f := range bytesFields(typ) {
		byName[typ.Field(f.index).Name] = f
	}
	for name, want := range map[string]bytesField{
		"Volumes":         {tag: tag{num: 1, rep: true}, kind: bytesMessages},
		"Containers":      {tag: tag{num: 2, rep: true}, kind: bytesMessages},
		"NodeSelector":    {tag: tag{num: 7, rep: true}, kind: bytesOther},
		"NodeName":        {tag: tag{num: 10}, kind: bytesOther},
		"SecurityContext": {tag: tag{num: 14}, kind: bytesMessagePtr},
		"Affinity":        {tag: tag{num: 18}, kind: bytesMessagePtr},
	} {
		got, ok := byName[name]
		if !ok || got.num != want.num || got.rep != want.rep || got.kind != want.kind {
			t.Errorf("%s: got %+v (found %v), want number %d, repeated %v, kind %d", name, got, ok, want.num, want.rep, want.kind)
		}
	}
	if _, ok := byName["RestartPolicy"]; !ok {
		t.Error("RestartPolicy, a string of wire type bytes, is missing")
	}
	if _, ok := byName["ActiveDeadlineSeconds"]; ok {
		t.Error("ActiveDeadlineSeconds, a varint, is listed")
	}
	podFields := map[string]bytesKind{}
	pod := reflect.TypeFor[v1.Pod]()
	for _, f := range bytesFields(pod) {
		podFields[pod.Field(f.index).Name] = f.kind
	}
	if podFields["ObjectMeta"] != bytesMessage || podFields["Spec"] != bytesMessage || podFields["Status"] != bytesMessage {
		t.Errorf("Pod's fields: %v; want metadata, spec and status as messages", podFields)
	}
}

func TestByNumber(t *testing.T) {
	var fields []string
	fields = byNumber(fields, 3, "c")
	fields = byNumber(fields, 1, "a")
	if !reflect.DeepEqual(fields, []string{"", "a", "", "c"}) {
		t.Fatalf("got %q", fields)
	}
}
