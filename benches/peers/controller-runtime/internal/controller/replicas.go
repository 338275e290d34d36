// Package controller is the configmapset controller written with controller-runtime.
package controller

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"wasm-reconciler/benches/peers/controller-runtime/api/v1alpha1"
)

// RequeueWhileConverging is the delay before the next round while work remains beyond this round's burst.
const RequeueWhileConverging = 100 * time.Millisecond

// ConditionState is a condition this controller reports.
type ConditionState struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// Announcement is a Normal event to publish on the set.
type Announcement struct {
	Reason string
	Note   string
}

// Round is what one reconcile does: children to write and delete, counts, conditions, events.
type Round struct {
	// Apply holds the indexes of replicas to write: missing ones within the burst and drifted ones.
	Apply []int32
	// Delete holds the children to delete.
	Delete        []*corev1.ConfigMap
	Replicas      int32
	ReadyReplicas int32
	Conditions    []ConditionState
	Events        []Announcement
	// Requeue says work remains for another round.
	Requeue bool
	// Finalized says (draining only) that no child is left and the finalizer may go.
	Finalized bool
}

// Converge is one round of a set that is not being deleted. Missing replicas are created lowest index first,
// at most burst; drifted replicas are rewritten; at most burst excess children are deleted (names that are not
// replicas first, then the highest indexes). Replicas that match are left alone.
func Converge(setName string, spec *v1alpha1.ConfigMapSetSpec, observed []*corev1.ConfigMap) Round {
	replicas := max(spec.Replicas, 0)
	burst := burstOf(spec)
	round := observedCounts(setName, spec, observed)
	byName := make(map[string]*corev1.ConfigMap, len(observed))
	for _, child := range observed {
		byName[child.Name] = child
	}
	missing, created, drifted := 0, 0, 0
	for index := int32(0); index < replicas; index++ {
		child, found := byName[ChildName(setName, index)]
		switch {
		case found && MatchesTemplate(setName, spec, child):
		case found:
			drifted++
			round.Apply = append(round.Apply, index)
		default:
			missing++
			if created < burst {
				created++
				round.Apply = append(round.Apply, index)
			}
		}
	}
	excess := ScaleDownOrder(setName, replicas, observed)
	deleted := min(len(excess), burst)
	round.Delete = excess[:deleted]

	ready := round.ReadyReplicas == spec.Replicas && len(excess) == 0
	readyReason := "ReplicasNotReady"
	if ready {
		readyReason = "ReplicasReady"
	}
	round.Conditions = append(round.Conditions,
		ConditionState{"Ready", ready, readyReason, fmt.Sprintf(
			"%d of %d observed ConfigMaps match the template; %d desired, %d excess",
			round.ReadyReplicas, round.Replicas, spec.Replicas, len(excess))},
		progressing(missing, len(excess), drifted))
	if created > 0 {
		round.Events = append(round.Events, Announcement{"ScalingUp", fmt.Sprintf(
			"creating %d ConfigMap(s), %d still missing after this round", created, missing-created)})
	}
	if deleted > 0 {
		round.Events = append(round.Events, Announcement{"ScalingDown", fmt.Sprintf(
			"deleting %d ConfigMap(s), %d excess left after this round", deleted, len(excess)-deleted)})
	}
	round.Requeue = missing > created || len(excess) > deleted
	return round
}

// Drain is one round of a set being deleted: up to burst children go (highest indexes first); Finalized once
// none is observed.
func Drain(setName string, spec *v1alpha1.ConfigMapSetSpec, observed []*corev1.ConfigMap) Round {
	round := observedCounts(setName, spec, observed)
	round.Conditions = append(round.Conditions,
		ConditionState{"Ready", false, "Deleting", "the ConfigMapSet is being deleted"})
	if len(observed) == 0 {
		round.Conditions = append(round.Conditions,
			ConditionState{"Progressing", false, "Drained", "no ConfigMap left"})
		round.Finalized = true
		return round
	}
	order := ScaleDownOrder(setName, 0, observed)
	deleted := min(len(order), burstOf(spec))
	message := fmt.Sprintf("deleting %d ConfigMap(s), %d left after this round", deleted, len(order)-deleted)
	round.Delete = order[:deleted]
	round.Conditions = append(round.Conditions, ConditionState{"Progressing", true, "Draining", message})
	round.Events = append(round.Events, Announcement{"Draining", message})
	round.Requeue = true
	return round
}

// ChildName is <set>-<index>.
func ChildName(setName string, index int32) string {
	return setName + "-" + strconv.Itoa(int(index))
}

// ChildIndex is the replica index of a child name, if it is exactly <set>-<index>.
func ChildIndex(setName, childName string) (int32, bool) {
	digits, ok := strings.CutPrefix(childName, setName+"-")
	if !ok {
		return 0, false
	}
	index, err := strconv.ParseUint(digits, 10, 31)
	if err != nil || strconv.FormatUint(index, 10) != digits {
		return 0, false
	}
	return int32(index), true
}

// DesiredLabels are the template labels plus the set label.
func DesiredLabels(setName string, spec *v1alpha1.ConfigMapSetSpec) map[string]string {
	labels := make(map[string]string, len(spec.Template.Metadata.Labels)+1)
	for key, value := range spec.Template.Metadata.Labels {
		labels[key] = value
	}
	labels[v1alpha1.SetLabel] = setName
	return labels
}

// MatchesTemplate says whether a child carries every desired label, annotation and data entry (extra entries
// belong to other field managers and are not drift).
func MatchesTemplate(setName string, spec *v1alpha1.ConfigMapSetSpec, child *corev1.ConfigMap) bool {
	return containsAll(child.Labels, DesiredLabels(setName, spec)) &&
		containsAll(child.Annotations, spec.Template.Metadata.Annotations) &&
		containsAll(child.Data, spec.Template.Data)
}

// ScaleDownOrder lists the children that are not desired replicas, in deletion order: non-replica names first
// (by name), then the highest indexes.
func ScaleDownOrder(setName string, replicas int32, observed []*corev1.ConfigMap) []*corev1.ConfigMap {
	type candidate struct {
		index   int32
		replica bool
		child   *corev1.ConfigMap
	}
	var excess []candidate
	for _, child := range observed {
		index, replica := ChildIndex(setName, child.Name)
		if !replica || index >= replicas {
			excess = append(excess, candidate{index, replica, child})
		}
	}
	sort.Slice(excess, func(i, j int) bool {
		a, b := excess[i], excess[j]
		switch {
		case !a.replica && !b.replica:
			return a.child.Name < b.child.Name
		case a.replica != b.replica:
			return !a.replica
		default:
			return a.index > b.index
		}
	})
	order := make([]*corev1.ConfigMap, len(excess))
	for i, candidate := range excess {
		order[i] = candidate.child
	}
	return order
}

func observedCounts(setName string, spec *v1alpha1.ConfigMapSetSpec, observed []*corev1.ConfigMap) Round {
	round := Round{Replicas: int32(len(observed))}
	for _, child := range observed {
		if MatchesTemplate(setName, spec, child) {
			round.ReadyReplicas++
		}
	}
	return round
}

func progressing(missing, excess, drifted int) ConditionState {
	message := fmt.Sprintf("%d missing, %d excess, %d drifted", missing, excess, drifted)
	switch {
	case missing > 0:
		return ConditionState{"Progressing", true, "ScalingUp", message}
	case excess > 0:
		return ConditionState{"Progressing", true, "ScalingDown", message}
	case drifted > 0:
		return ConditionState{"Progressing", true, "Updating", message}
	default:
		return ConditionState{"Progressing", false, "Stable", message}
	}
}

func containsAll(actual, expected map[string]string) bool {
	for key, value := range expected {
		if got, ok := actual[key]; !ok || got != value {
			return false
		}
	}
	return true
}

func burstOf(spec *v1alpha1.ConfigMapSetSpec) int {
	return max(int(spec.Burst), 1)
}
