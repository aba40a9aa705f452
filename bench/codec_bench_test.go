package bench

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/boltindexer"
)

// The codec benchmarks compare one encode+decode of a realistic 8 KB Pod:
// the record codec stores use (msgpack envelope around a protobuf payload)
// against bare protobuf and JSON. Target: record ≤ 1.5x protobuf.

func BenchmarkCodecRecord(b *testing.B) {
	p := Pod(1, 10, 1)
	rc, err := boltindexer.NewRecordCodec(&v1.Pod{})
	if err != nil {
		b.Fatal(err)
	}
	data, _ := rc.Encode(p)
	b.ResetTimer()
	for b.Loop() {
		data, err := rc.Encode(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rc.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(data)), "bytes/obj")
}

func BenchmarkCodecProtobuf(b *testing.B) {
	p := Pod(1, 10, 1)
	data, _ := p.Marshal()
	b.ResetTimer()
	for b.Loop() {
		data, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		var out v1.Pod
		if err := out.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(data)), "bytes/obj")
}

func BenchmarkCodecJSON(b *testing.B) {
	p := Pod(1, 10, 1)
	data, _ := json.Marshal(p)
	b.ResetTimer()
	for b.Loop() {
		data, err := json.Marshal(p)
		if err != nil {
			b.Fatal(err)
		}
		var out v1.Pod
		if err := json.Unmarshal(data, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(data)), "bytes/obj")
}
