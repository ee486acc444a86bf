package scenario

// MIG instances as the NVIDIA device plugin advertises them (docs/design.md §13), for every
// harness that reads them: under the mixed strategy each healthy GPU instance of profile P
// is one unit of the extended resource nvidia.com/mig-<P> (the kubelet's allocatable counts
// a device plugin's healthy devices only), and a MIG pod requests N of it, bound or
// Pending. kube-scheduler's NodeResourcesFit counts it as any scalar resource (fit.go
// fitsRequest), Volcano's node sums and queues as any scalar of api.Resource: the node's
// allocatable less every bound pod's request, whichever card their instances are on.

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// MigResource is the device plugin's resource for a profile under mixed, a "+" (the
// profile's attributes: 1g.10gb+me) written "." as a resource name needs
// (NVIDIA/k8s-device-plugin internal/rm/rm.go, AddDefaultResourcesToConfig).
func MigResource(profile string) v1.ResourceName {
	return v1.ResourceName("nvidia.com/mig-" + strings.ReplaceAll(profile, "+", "."))
}

// AddMIG sets the node's allocatable nvidia.com/mig-<P>: its healthy cards' instances of
// P, under the mixed strategy. Under none (the scenario's default) the device plugin
// advertises no instance. Under single it names them nvidia.com/gpu, which the harnesses
// give no upstream meaning (HAMi's configuration makes it ignoredByScheduler; the advisor
// counts it under the profile's name), so they refuse it.
func AddMIG(alloc v1.ResourceList, n Node) error {
	counts := map[v1.ResourceName]int64{}
	for _, c := range n.Cards {
		if c.Mig == nil || n.MigStrategy == "" || n.MigStrategy == "none" {
			continue
		}
		if n.MigStrategy != "mixed" {
			return fmt.Errorf("nodes[%s]: mig_strategy %q: the harnesses model none and mixed", n.Name, n.MigStrategy)
		}
		if c.Healthy != nil && !*c.Healthy {
			continue
		}
		for _, inst := range c.Mig.Instances {
			counts[MigResource(inst.Profile)]++
		}
	}
	for name, count := range counts {
		alloc[name] = *resource.NewQuantity(count, resource.DecimalSI)
	}
	return nil
}

// MigRequest adds a MIG pod's nvidia.com/mig-<P>: N to its requests and returns its limits
// (an extended resource's limit equals its request); nil for any other pod.
func MigRequest(p Pod, requests v1.ResourceList) v1.ResourceList {
	if p.Request.MigProfile == "" {
		return nil
	}
	q := *resource.NewQuantity(int64(p.Request.GPUs()), resource.DecimalSI)
	requests[MigResource(p.Request.MigProfile)] = q
	return v1.ResourceList{MigResource(p.Request.MigProfile): q}
}
