package protofield

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestParseTag(t *testing.T) {
	for _, c := range []struct {
		tag     string
		num     int
		rep, ok bool
	}{
		{"bytes,1,opt,name=metadata", 1, false, true},
		{"bytes,2,rep,name=containers", 2, true, true},
		{"varint,3,opt,name=replicas", 0, false, false},
		{"bytes,x,opt,name=bad", 0, false, false},
		{"bytes,0,opt,name=zero", 0, false, false},
		{"bytes,4", 0, false, false},
		{"", 0, false, false},
	} {
		num, rep, ok := parseTag(c.tag)
		if num != c.num || rep != c.rep || ok != c.ok {
			t.Errorf("parseTag(%q) = %d, %v, %v; want %d, %v, %v", c.tag, num, rep, ok, c.num, c.rep, c.ok)
		}
	}
}

// TestBytesFieldsOfPodSpec: a PodSpec's fields of wire type bytes, each
// with its number and kind as the generated code has them.
func TestBytesFieldsOfPodSpec(t *testing.T) {
	byName := map[string]Field{}
	typ := reflect.TypeFor[v1.PodSpec]()
	for _, f := range BytesFields(typ) {
		byName[typ.Field(f.Index).Name] = f
	}
	for name, want := range map[string]Field{
		"Volumes":         {Number: 1, Repeated: true, Kind: MessageSlice},
		"Containers":      {Number: 2, Repeated: true, Kind: MessageSlice},
		"NodeSelector":    {Number: 7, Repeated: true, Kind: Other},
		"NodeName":        {Number: 10, Kind: Other},
		"SecurityContext": {Number: 14, Kind: MessagePointer},
		"Affinity":        {Number: 18, Kind: MessagePointer},
	} {
		got, ok := byName[name]
		if !ok || got.Number != want.Number || got.Repeated != want.Repeated || got.Kind != want.Kind {
			t.Errorf("%s: got %+v (found %v), want number %d, repeated %v, kind %d", name, got, ok, want.Number, want.Repeated, want.Kind)
		}
	}
	if _, ok := byName["RestartPolicy"]; !ok {
		t.Error("RestartPolicy, a string of wire type bytes, is missing")
	}
	if _, ok := byName["ActiveDeadlineSeconds"]; ok {
		t.Error("ActiveDeadlineSeconds, a varint, is listed")
	}
	podFields := map[string]Kind{}
	pod := reflect.TypeFor[v1.Pod]()
	for _, f := range BytesFields(pod) {
		podFields[pod.Field(f.Index).Name] = f.Kind
	}
	if podFields["ObjectMeta"] != Message || podFields["Spec"] != Message || podFields["Status"] != Message {
		t.Errorf("Pod's fields: %v; want metadata, spec and status as messages", podFields)
	}
}

func TestByNumber(t *testing.T) {
	var fields []string
	fields = ByNumber(fields, 3, "c")
	fields = ByNumber(fields, 1, "a")
	if !reflect.DeepEqual(fields, []string{"", "a", "", "c"}) {
		t.Fatalf("got %q", fields)
	}
}
