package boltinformer_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer"
)

// TestIndexerReadErrorGoesToOptionsLogger: List, which has no error to
// return, reports a damaged record to Options.Logger, never to the
// process's klog, and returns the records that decode.
func TestIndexerReadErrorGoesToOptionsLogger(t *testing.T) {
	path := syncedFile(t)
	flipRecordByte(t, path, "ns/b")
	logged := &lines{}
	c, err := boltinformer.Open(path, boltinformer.Options{NoSync: true, Logger: logged.logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	inf, err := c.NewInformer(newRecordingLW("10"), &v1.Pod{}, boltinformer.InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(inf.GetIndexer().List()); got != 2 {
		t.Fatalf("List returned %d objects, want the 2 that decode", got)
	}
	for _, l := range logged.get() {
		if strings.Contains(l, "ns/b") && strings.Contains(l, "checksum") && strings.Contains(l, `"store"="Pod.v1"`) {
			return
		}
	}
	t.Fatalf("Options.Logger has no line naming the damaged record ns/b and its store; it has:\n%s", strings.Join(logged.get(), "\n"))
}
