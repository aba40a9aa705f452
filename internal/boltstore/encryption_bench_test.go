package boltstore

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/boltinformer/boltinformer/encryption"
)

// benchPod is a Pod of about 8 KB in protobuf, the size the codec figures of
// docs/design.md were measured on.
func benchPod() *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1", Labels: map[string]string{}, Annotations: map[string]string{}}}
	for i := range 40 {
		p.Labels[fmt.Sprint("label-", i)] = strings.Repeat("v", 20)
		p.Annotations[fmt.Sprint("annotation-", i)] = strings.Repeat("a", 100)
	}
	for i := range 8 {
		c := v1.Container{Name: fmt.Sprint("c", i), Image: "registry.example/image:" + strings.Repeat("t", 40), Args: []string{strings.Repeat("arg", 60)}}
		for j := range 10 {
			c.Env = append(c.Env, v1.EnvVar{Name: fmt.Sprint("ENV_", j), Value: strings.Repeat("e", 30)})
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	return p
}

func benchCodec(b *testing.B, seal bool) (*objectCodec, *encryption.Keyring) {
	c, err := newObjectCodec(&v1.Pod{})
	if err != nil {
		b.Fatal(err)
	}
	kc, err := encryption.GenerateKey("k1")
	if err != nil {
		b.Fatal(err)
	}
	keys, err := encryption.New([]encryption.KeyConfig{kc})
	if err != nil {
		b.Fatal(err)
	}
	c.store, c.keys, c.seal = "Pod.v1", keys, seal
	return c, keys
}

// BenchmarkPayloadDecode is the baseline: decoding a plaintext Pod record.
func BenchmarkPayloadDecode(b *testing.B) {
	c, _ := benchCodec(b, false)
	rec, _, _, err := newRecord(c, "ns/p", benchPod(), nil, new([]byte), new([]byte))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(rec.Payload)))
	for b.Loop() {
		if _, err := c.decode("ns/p", rec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPayloadSealOpen is what encryption adds per object: one seal
// (a write) and one open (a read) of the same payload. Its ns/op divided
// by BenchmarkPayloadDecode's is the ratio docs/bench/history.md reports
// for encryption at rest.
func BenchmarkPayloadSealOpen(b *testing.B) {
	c, keys := benchCodec(b, false)
	rec, _, _, err := newRecord(c, "ns/p", benchPod(), nil, new([]byte), new([]byte))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(rec.Payload)))
	for b.Loop() {
		id, sealed, err := keys.Seal("Pod.v1", "ns/p", rec.Payload)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := keys.Open(id, "Pod.v1", "ns/p", sealed); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPayloadDecodeSealed is a read of a sealed record: open and decode.
func BenchmarkPayloadDecodeSealed(b *testing.B) {
	c, _ := benchCodec(b, true)
	rec, _, _, err := newRecord(c, "ns/p", benchPod(), nil, new([]byte), new([]byte))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(rec.Payload)))
	for b.Loop() {
		if _, err := c.decode("ns/p", rec); err != nil {
			b.Fatal(err)
		}
	}
}
