package bench

import (
	"encoding/json"
	"testing"
)

func TestPodIsAboutEightKB(t *testing.T) {
	b, err := json.Marshal(Pod(12345, 100, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 6500 || len(b) > 10000 {
		t.Fatalf("generated pod is %d bytes of JSON, want about 8 KB", len(b))
	}
}
