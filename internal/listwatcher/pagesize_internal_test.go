package listwatcher

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func podOfSize(t *testing.T, size int) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	// The annotation's value takes the rest, less its few bytes of framing.
	p.Annotations = map[string]string{"pad": ""}
	p.Annotations["pad"] = strings.Repeat("x", size-p.Size())
	for p.Size() > size {
		p.Annotations["pad"] = p.Annotations["pad"][1:]
	}
	return p
}

func TestPageSizerLimit(t *testing.T) {
	p := newPageSizer(50, 100_000)
	if got := p.limit(); got != 50 {
		t.Fatalf("limit before any object = %d, want PageSize 50", got)
	}
	p.observe(podOfSize(t, 10_000))
	if got := p.limit(); got != 10 {
		t.Fatalf("limit after a 10 KB object = %d, want 10", got)
	}
	// Only one object in sizeSampleEvery is measured: the seven after the
	// first are not.
	unsampled := podOfSize(t, 1_000_000)
	for range sizeSampleEvery - 1 {
		p.observe(unsampled)
	}
	if got := p.limit(); got != 10 {
		t.Fatalf("limit after unsampled objects = %d, want still 10", got)
	}
	// A sampled object larger than PageBytes still leaves room for one.
	huge := podOfSize(t, 1_000_000)
	for range 8 * sizeSampleEvery {
		p.observe(huge)
	}
	if got := p.limit(); got != 1 {
		t.Fatalf("limit after 1 MB objects = %d, want 1", got)
	}
	// Objects that shrink again raise it back, to PageSize at most.
	small := podOfSize(t, 500)
	for range 64 * sizeSampleEvery {
		p.observe(small)
	}
	if got := p.limit(); got != 50 {
		t.Fatalf("limit after 500 B objects = %d, want PageSize 50", got)
	}
}

func TestPageSizerCountsWhatItCannotMeasure(t *testing.T) {
	p := newPageSizer(50, 1000)
	for range 3 * sizeSampleEvery {
		p.observe(&unstructured.Unstructured{Object: map[string]any{"data": strings.Repeat("x", 10_000)}})
	}
	if got := p.limit(); got != 50 {
		t.Errorf("limit after unstructured objects = %d, want PageSize 50", got)
	}
	off := newPageSizer(50, -1)
	off.observe(podOfSize(t, 10_000))
	if got := off.limit(); got != 50 {
		t.Errorf("limit with negative PageBytes = %d, want PageSize 50", got)
	}
}
