package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Widget is a namespaced custom resource: a spec a user writes and a
// status the example's controller writes back.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec"`
	Status WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is what a Widget should be.
type WidgetSpec struct {
	// Color is the widget's colour.
	Color string `json:"color"`
	// Size is a quantity ("3", "1500m", "2Ki"), as Kubernetes writes
	// resource amounts.
	Size resource.Quantity `json:"size"`
	// Parts names the widget's parts, in order.
	Parts []string `json:"parts,omitempty"`
	// Replicas is how many copies to keep; nil means one.
	Replicas *int32 `json:"replicas,omitempty"`
}

// WidgetStatus is what the controller last saw of a Widget.
type WidgetStatus struct {
	// ObservedGeneration is the metadata.generation the controller last
	// reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ObservedColor is Spec.Color as of ObservedGeneration.
	ObservedColor string `json:"observedColor,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Widget `json:"items"`
}
