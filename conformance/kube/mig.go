package main

// MIG instances as kube-scheduler sees them (docs/design.md §13): the NVIDIA device
// plugin's mixed strategy advertises each healthy GPU instance of profile P as one unit of
// the extended resource nvidia.com/mig-<P> (the kubelet's allocatable counts a device
// plugin's healthy devices only), and a MIG pod requests N of it, bound or Pending.
// NodeResourcesFit counts it as it counts any scalar resource (fit.go fitsRequest): the
// node's allocatable less every bound pod's request, whichever card their instances are on.

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"xgpu-insight/conformance/cluster/scenario"
)

// migResource: the device plugin's resource for a profile under mixed, a "+" (the
// profile's attributes: 1g.10gb+me) written "." as a resource name needs
// (NVIDIA/k8s-device-plugin internal/rm/rm.go, AddDefaultResourcesToConfig).
func migResource(profile string) v1.ResourceName {
	return v1.ResourceName("nvidia.com/mig-" + strings.ReplaceAll(profile, "+", "."))
}

// addMIG sets the node's allocatable nvidia.com/mig-<P>: its healthy cards' instances of
// P, under the mixed strategy. Under none (the scenario's default) the device plugin
// advertises no instance. Under single it names them nvidia.com/gpu, which HAMi's
// configuration makes ignoredByScheduler: no upstream meaning here, so the harness refuses it.
func addMIG(alloc v1.ResourceList, n scenario.Node) error {
	counts := map[v1.ResourceName]int64{}
	for _, c := range n.Cards {
		if c.Mig == nil || n.MigStrategy == "" || n.MigStrategy == "none" {
			continue
		}
		if n.MigStrategy != "mixed" {
			return fmt.Errorf("nodes[%s]: mig_strategy %q: the kube harness models none and mixed", n.Name, n.MigStrategy)
		}
		if c.Healthy != nil && !*c.Healthy {
			continue
		}
		for _, inst := range c.Mig.Instances {
			counts[migResource(inst.Profile)]++
		}
	}
	for name, count := range counts {
		alloc[name] = *resource.NewQuantity(count, resource.DecimalSI)
	}
	return nil
}

// migRequest adds a MIG pod's nvidia.com/mig-<P>: N to its requests and returns its limits
// (an extended resource's limit equals its request); nil for any other pod.
func migRequest(p scenario.Pod, requests v1.ResourceList) v1.ResourceList {
	if p.Request.MigProfile == "" {
		return nil
	}
	q := *resource.NewQuantity(int64(p.Request.GPUs()), resource.DecimalSI)
	requests[migResource(p.Request.MigProfile)] = q
	return v1.ResourceList{migResource(p.Request.MigProfile): q}
}

// isMIG: whether the pod asks a MIG instance (an nvidia.com/mig-* request).
func isMIG(pod *v1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		for name := range c.Resources.Requests {
			if strings.HasPrefix(string(name), "nvidia.com/mig-") {
				return true
			}
		}
	}
	return false
}
