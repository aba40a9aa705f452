package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestEventLoggerLevels: one JSON line per change at -v=2, the initial
// list's objects only from -v=3, nothing at -v=0 and -v=1.
func TestEventLoggerLevels(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "7"}}
	for _, tc := range []struct {
		v    int
		want []string
	}{
		{0, nil},
		{1, nil},
		{2, []string{"ADDED ns/a", "MODIFIED ns/a", "DELETED ns/a", "DELETED ns/gone"}},
		{3, []string{"ADDED ns/a", "ADDED ns/a", "MODIFIED ns/a", "DELETED ns/a", "DELETED ns/gone"}},
	} {
		var out lockedBuffer
		o := logOptions{verbosity: tc.v, format: logFormatJSON}
		h := eventLogger{logger: o.logger(&out)}
		h.OnAdd(cm, true)
		h.OnAdd(cm, false)
		h.OnUpdate(cm, cm)
		h.OnDelete(cm)
		h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: cm})
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if line == "" {
				continue
			}
			var entry struct {
				TS     string `json:"ts"`
				Msg    string `json:"msg"`
				Type   string `json:"type"`
				Key    string `json:"key"`
				Object struct{ Name, Namespace string }
				RV     string `json:"resourceVersion"`
			}
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("-v=%d: not a JSON line: %q: %v", tc.v, line, err)
			}
			if _, err := time.Parse(time.RFC3339Nano, entry.TS); err != nil {
				t.Errorf("-v=%d: ts of %q is not RFC 3339: %v", tc.v, line, err)
			}
			key := entry.Key
			if key == "" {
				key = entry.Object.Namespace + "/" + entry.Object.Name
				if entry.RV != "7" {
					t.Errorf("-v=%d: %q lacks the resourceVersion", tc.v, line)
				}
			}
			got = append(got, entry.Type+" "+key)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("-v=%d: logged %q, want %q", tc.v, got, tc.want)
		}
	}
}
