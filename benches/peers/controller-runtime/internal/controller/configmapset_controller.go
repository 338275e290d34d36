package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"wasm-reconciler/benches/peers/controller-runtime/api/v1alpha1"
)

const (
	// Manager is the field manager of the children and the name of the event recorder.
	Manager = "configmapset-controller-runtime"
	// ownerKey indexes ConfigMaps by the name of their controlling ConfigMapSet.
	ownerKey = ".metadata.controller"
	// reconciled is the condition saying how the last reconcile went.
	reconciled = "Reconciled"
)

// ConfigMapSetReconciler keeps each ConfigMapSet's ConfigMaps equal to its template.
type ConfigMapSetReconciler struct {
	client.Client
	Recorder events.EventRecorder
}

// Reconcile runs one round for a ConfigMapSet: finalizer, children, events, status.
func (r *ConfigMapSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var set v1alpha1.ConfigMapSet
	if err := r.Get(ctx, req.NamespacedName, &set); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	deleting := !set.DeletionTimestamp.IsZero()
	switch {
	case deleting && !controllerutil.ContainsFinalizer(&set, v1alpha1.Finalizer):
		// Being deleted without our finalizer: garbage collection takes the children.
		return ctrl.Result{}, nil
	case !deleting && !controllerutil.ContainsFinalizer(&set, v1alpha1.Finalizer):
		// The finalizer goes on before any child is written.
		controllerutil.AddFinalizer(&set, v1alpha1.Finalizer)
		if err := r.Update(ctx, &set); err != nil {
			return ctrl.Result{}, err
		}
	}

	var list corev1.ConfigMapList
	if err := r.List(ctx, &list, client.InNamespace(req.Namespace), client.MatchingFields{ownerKey: set.Name}); err != nil {
		return ctrl.Result{}, err
	}
	observed := make([]*corev1.ConfigMap, 0, len(list.Items))
	for i := range list.Items {
		if owner := metav1.GetControllerOf(&list.Items[i]); owner != nil && owner.UID == set.UID {
			observed = append(observed, &list.Items[i])
		}
	}
	var round Round
	if deleting {
		round = Drain(set.Name, &set.Spec, observed)
	} else {
		round = Converge(set.Name, &set.Spec, observed)
	}

	writeErr := r.writeChildren(ctx, &set, &round)
	if writeErr == nil {
		for _, event := range round.Events {
			r.Recorder.Eventf(&set, nil, corev1.EventTypeNormal, event.Reason, "Reconcile", "%s", event.Note)
		}
	}
	if err := r.writeStatus(ctx, &set, &round, writeErr); err != nil {
		// A set gone meanwhile (the cache was behind its deletion) needs nothing more.
		return ctrl.Result{}, client.IgnoreNotFound(errors.Join(writeErr, err))
	}
	if writeErr != nil {
		return ctrl.Result{}, writeErr
	}
	if round.Finalized {
		controllerutil.RemoveFinalizer(&set, v1alpha1.Finalizer)
		if err := r.Update(ctx, &set); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		log.V(1).Info("drained; finalizer removed")
		return ctrl.Result{}, nil
	}
	if round.Requeue {
		return ctrl.Result{RequeueAfter: RequeueWhileConverging}, nil
	}
	return ctrl.Result{}, nil
}

// writeChildren applies the round's children with server-side apply, then deletes the excess ones.
func (r *ConfigMapSetReconciler) writeChildren(ctx context.Context, set *v1alpha1.ConfigMapSet, round *Round) error {
	owner := metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).
		WithKind("ConfigMapSet").
		WithName(set.Name).
		WithUID(set.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
	for _, index := range round.Apply {
		child := corev1ac.ConfigMap(ChildName(set.Name, index), set.Namespace).
			WithLabels(DesiredLabels(set.Name, &set.Spec)).
			WithOwnerReferences(owner)
		if len(set.Spec.Template.Metadata.Annotations) > 0 {
			child.WithAnnotations(set.Spec.Template.Metadata.Annotations)
		}
		if len(set.Spec.Template.Data) > 0 {
			child.WithData(set.Spec.Template.Data)
		}
		if err := r.Apply(ctx, child, client.FieldOwner(Manager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying ConfigMap %s: %w", *child.Name, err)
		}
	}
	for _, child := range round.Delete {
		uid := child.UID
		err := r.Delete(ctx, child, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		// Already gone: the cache had not seen the deletion yet.
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ConfigMap %s: %w", child.Name, err)
		}
	}
	return nil
}

// writeStatus merges the round's counts and conditions into the status and patches it when it changed.
func (r *ConfigMapSetReconciler) writeStatus(ctx context.Context, set *v1alpha1.ConfigMapSet, round *Round, writeErr error) error {
	original := set.DeepCopy()
	set.Status.Replicas = round.Replicas
	set.Status.ReadyReplicas = round.ReadyReplicas
	set.Status.ObservedGeneration = set.Generation
	for _, condition := range round.Conditions {
		setCondition(set, condition)
	}
	if writeErr == nil {
		setCondition(set, ConditionState{reconciled, true, "Succeeded", "the desired state was applied"})
	} else {
		setCondition(set, ConditionState{reconciled, false, "ApplyFailed", writeErr.Error()})
	}
	if equality.Semantic.DeepEqual(original.Status, set.Status) {
		return nil
	}
	return r.Status().Patch(ctx, set, client.MergeFrom(original))
}

func setCondition(set *v1alpha1.ConfigMapSet, state ConditionState) {
	status := metav1.ConditionFalse
	if state.Status {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&set.Status.Conditions, metav1.Condition{
		Type:               state.Type,
		Status:             status,
		Reason:             state.Reason,
		Message:            state.Message,
		ObservedGeneration: set.Generation,
	})
}

// SetupWithManager indexes ConfigMaps by owner and registers the controller: ConfigMapSets and the ConfigMaps
// they own, concurrency reconciles at once.
func (r *ConfigMapSetReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.ConfigMap{}, ownerKey, func(object client.Object) []string {
		owner := metav1.GetControllerOf(object)
		if owner == nil || owner.APIVersion != v1alpha1.GroupVersion.String() || owner.Kind != "ConfigMapSet" {
			return nil
		}
		return []string{owner.Name}
	})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ConfigMapSet{}).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Named("configmapset").
		Complete(r)
}
