package bench

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/boltinformer/boltinformer/internal/cachefile"
)

// The codec benchmarks compare one encode+decode of a realistic 8 KB Pod:
// the record stores write (msgpack envelope and CRC-32C around a protobuf payload)
// against bare protobuf and JSON. Target: record ≤ 1.5x protobuf.

func BenchmarkCodecRecord(b *testing.B) {
	p := Pod(1, 10, 1)
	key := []byte(p.Namespace + "/" + p.Name)
	encode := func() ([]byte, error) {
		payload, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		return cachefile.EncodeRecord(key, &cachefile.Record{RV: p.ResourceVersion, UID: string(p.UID), Codec: cachefile.CodecProtobuf,
			APIVersion: "v1", Kind: "Pod", Payload: payload, Index: []cachefile.IndexValues{{Name: "namespace", Values: []string{p.Namespace}}}})
	}
	data, _ := encode()
	b.ResetTimer()
	for b.Loop() {
		data, err := encode()
		if err != nil {
			b.Fatal(err)
		}
		rec, err := cachefile.DecodeRecord(key, data)
		if err != nil {
			b.Fatal(err)
		}
		var out v1.Pod
		if err := out.Unmarshal(rec.Payload); err != nil {
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
