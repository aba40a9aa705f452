// Package v1alpha1 is version v1alpha1 of the example.boltinformer.io API
// group: the Widget custom resource of examples/crd. Its clientset,
// listers and informers under examples/crd/generated are generated from
// these types by k8s.io/code-generator (see examples/crd/doc.go).
//
// +k8s:deepcopy-gen=package
// +groupName=example.boltinformer.io
package v1alpha1
