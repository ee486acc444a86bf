package main

// MIG instances as kube-scheduler sees them (docs/design.md §13): the device plugin's
// resources, as the shared scenario package builds them (scenario.AddMIG, MigRequest).

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

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
