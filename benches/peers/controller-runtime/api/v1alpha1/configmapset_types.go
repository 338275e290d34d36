package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

//go:generate go tool controller-gen object paths=./...

const (
	// SetLabel is put on every child and names its set.
	SetLabel = "examples.wasm-reconciler.io/configmapset"
	// Finalizer drains the children before the set goes away.
	Finalizer = "examples.wasm-reconciler.io/drain"
	// DefaultBurst is spec.burst when not given (the CRD defaults it too).
	DefaultBurst = 10
)

// ConfigMapSetSpec keeps Replicas ConfigMaps named <set>-<index> built from Template, creating and deleting
// at most Burst of them per reconcile.
type ConfigMapSetSpec struct {
	// Replicas is how many ConfigMaps to keep.
	Replicas int32 `json:"replicas"`
	// Template is what every ConfigMap holds.
	Template ConfigMapTemplate `json:"template"`
	// Burst is the most ConfigMaps created, and the most deleted, per reconcile.
	Burst int32 `json:"burst,omitempty"`
}

// ConfigMapTemplate is the ConfigMap every replica is built from.
type ConfigMapTemplate struct {
	// Metadata holds the labels and annotations of every replica.
	Metadata TemplateMetadata `json:"metadata,omitempty"`
	// Data of every replica.
	Data map[string]string `json:"data,omitempty"`
}

// TemplateMetadata holds the labels and annotations of the template.
type TemplateMetadata struct {
	// Labels of every replica (the set label is added to them).
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of every replica.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ConfigMapSetStatus is the observed state of a ConfigMapSet.
type ConfigMapSetStatus struct {
	// Replicas is the number of ConfigMaps of this set observed.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the number of observed ConfigMaps matching the template.
	ReadyReplicas int32 `json:"readyReplicas"`
	// ObservedGeneration is the generation of the spec the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready, Progressing and Reconciled.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// ConfigMapSet is a set of identical ConfigMaps kept at a desired count.
type ConfigMapSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ConfigMapSetSpec   `json:"spec,omitempty"`
	Status ConfigMapSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ConfigMapSetList is a list of ConfigMapSets.
type ConfigMapSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConfigMapSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ConfigMapSet{}, &ConfigMapSetList{})
}
