// Package v1alpha1 holds the ConfigMapSet API types (examples.wasm-reconciler.io/v1alpha1).
// The CustomResourceDefinition is plugins/configmapset/crd.yaml; only the Go types live here.
// +kubebuilder:object:generate=true
// +groupName=examples.wasm-reconciler.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of ConfigMapSet.
	GroupVersion = schema.GroupVersion{Group: "examples.wasm-reconciler.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this group version.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
