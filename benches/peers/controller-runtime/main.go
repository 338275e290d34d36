// Command configmapset-controller-runtime runs the configmapset controller written with controller-runtime,
// a peer of the wasm plugin for the benchmark in benches/peers.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"wasm-reconciler/benches/peers/controller-runtime/api/v1alpha1"
	"wasm-reconciler/benches/peers/controller-runtime/internal/controller"
)

func main() {
	var metricsAddr, probeAddr string
	var concurrency int
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the health and readiness probes.")
	flag.IntVar(&concurrency, "concurrency", 4, "Reconciles running at once.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
	})
	if err != nil {
		log.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	reconciler := &controller.ConfigMapSetReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder(controller.Manager),
	}
	if err := reconciler.SetupWithManager(ctx, mgr, concurrency); err != nil {
		log.Error(err, "unable to set up the controller")
		os.Exit(1)
	}
	utilruntime.Must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	utilruntime.Must(mgr.AddReadyzCheck("readyz", healthz.Ping))
	log.Info("starting the manager", "concurrency", concurrency)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "the manager stopped")
		os.Exit(1)
	}
}
