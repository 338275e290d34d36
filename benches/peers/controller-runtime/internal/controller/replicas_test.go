package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"wasm-reconciler/benches/peers/controller-runtime/api/v1alpha1"
)

func spec(replicas, burst int32) *v1alpha1.ConfigMapSetSpec {
	return &v1alpha1.ConfigMapSetSpec{
		Replicas: replicas,
		Burst:    burst,
		Template: v1alpha1.ConfigMapTemplate{
			Metadata: v1alpha1.TemplateMetadata{Labels: map[string]string{"app": "demo"}},
			Data:     map[string]string{"greeting": "hello"},
		},
	}
}

func children(spec *v1alpha1.ConfigMapSetSpec, indexes ...int32) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, index := range indexes {
		out = append(out, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ChildName("demo", index), Labels: DesiredLabels("demo", spec)},
			Data:       spec.Template.Data,
		})
	}
	return out
}

func TestSlowStartCreatesAtMostBurstAndRequeues(t *testing.T) {
	s := spec(5, 2)
	round := Converge("demo", s, children(s, 0, 1))
	if len(round.Apply) != 2 || round.Apply[0] != 2 || round.Apply[1] != 3 || !round.Requeue {
		t.Fatalf("want replicas 2 and 3 written and a requeue, got %+v", round)
	}
	if round.Events[0].Note != "creating 2 ConfigMap(s), 1 still missing after this round" {
		t.Fatalf("unexpected event %q", round.Events[0].Note)
	}
}

func TestSteadyStateWritesNothing(t *testing.T) {
	s := spec(3, 10)
	round := Converge("demo", s, children(s, 0, 1, 2))
	if len(round.Apply) != 0 || len(round.Delete) != 0 || round.Requeue || !round.Conditions[0].Status {
		t.Fatalf("want a quiet, Ready round, got %+v", round)
	}
	if round.Conditions[1].Reason != "Stable" {
		t.Fatalf("want Progressing=Stable, got %q", round.Conditions[1].Reason)
	}
}

func TestScaleDownDeletesHighestIndexesFirst(t *testing.T) {
	s := spec(1, 2)
	round := Converge("demo", s, children(s, 0, 1, 2, 3))
	if len(round.Delete) != 2 || round.Delete[0].Name != "demo-3" || round.Delete[1].Name != "demo-2" {
		t.Fatalf("want demo-3 and demo-2 deleted, got %+v", round.Delete)
	}
}

func TestDrainFinalizesOnlyWhenNoChildIsLeft(t *testing.T) {
	s := spec(3, 2)
	if round := Drain("demo", s, children(s, 0, 1, 2)); len(round.Delete) != 2 || round.Finalized {
		t.Fatalf("want two deletions and no finalization, got %+v", round)
	}
	if round := Drain("demo", s, nil); !round.Finalized {
		t.Fatalf("want finalized, got %+v", round)
	}
}
