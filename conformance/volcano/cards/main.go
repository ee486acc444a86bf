// Command cards runs Volcano v1.15.1's own vGPU device code on a scenario file: the node
// registration decode (vgpu.NewGPUDevices), the running pods' allocations (AddResource),
// the card filter and its cached score (FilterNode, ScoreNode) and the card choice
// (Allocate, which writes volcano.sh/vgpu-ids-new through a fake clientset). Whole-node
// filters: first allocate's own resource check (idleCheck, the harness's code: v1.15.1's
// pkg/scheduler/api cannot be built from the proxy), then kube-scheduler's own plugins as
// Volcano's predicates plugin runs them (it runs no NodeResourcesFit).
//
// The session around that code is the harness's, since the session package cannot be built
// from the proxy yet (docs/conformance.md): Pending pods one by one in the order of
// Volcano's priority plugin (priority, then creation), each seeing the allocations before
// it; deviceshare's node score, int64(math.Floor(s+0.5)) * deviceshare.ScheduleWeight
// (plugins/deviceshare/deviceshare.go getDeviceScore); the highest score wins, and among
// equal scores the first node by name where Volcano draws at random
// (util/scheduler_helper.go:209), the tied set reported.
//
//	cards [--scheduler volcano-vgpu] SCENARIO...
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeunschedulable"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"

	"volcano.sh/volcano/pkg/scheduler/api/devices"
	"volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu"
	"xgpu-insight/conformance/cluster"
)

const upstream = "volcano.sh/volcano v1.15.1 (pkg/scheduler/api/devices/nvidia/vgpu)"

type PodResult struct {
	Pod    string   `json:"pod"`
	Node   *string  `json:"node"`
	Cards  []int    `json:"cards"`
	Reason *string  `json:"reason"`
	Tied   []string `json:"tied"`
}

type Result struct {
	Scenario  string      `json:"scenario"`
	Scheduler string      `json:"scheduler"`
	Upstream  string      `json:"upstream"`
	Pods      []PodResult `json:"pods"`
	Error     string      `json:"error,omitempty"`
}

func main() {
	profile := flag.String("scheduler", "volcano-vgpu", "the advisor profile whose upstream runs")
	flag.Parse()
	if *profile != "volcano-vgpu" {
		fmt.Fprintf(os.Stderr, "cards: profile %s is not run by this harness (volcano-vgpu only)\n", *profile)
		os.Exit(2)
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	vgpu.VGPUEnable = true // deviceshare.VGPUEnable: true
	plugins, err := newPlugins()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	status := 0
	for _, path := range flag.Args() {
		res := Result{Scenario: path, Scheduler: *profile, Upstream: upstream, Pods: []PodResult{}}
		pods, err := runFile(path, plugins)
		if err != nil {
			res.Error = err.Error()
			status = 1
		} else {
			res.Pods = pods
		}
		if err := enc.Encode(res); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(status)
}

func newPlugins() ([]fwk.Plugin, error) {
	ctx := context.Background()
	feats := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	var out []fwk.Plugin
	for _, build := range []func() (fwk.Plugin, error){
		func() (fwk.Plugin, error) { return nodeunschedulable.New(ctx, nil, nil, feats) },
		func() (fwk.Plugin, error) { return nodeaffinity.New(ctx, &config.NodeAffinityArgs{}, nil, feats) },
		func() (fwk.Plugin, error) { return tainttoleration.New(ctx, nil, nil, feats) },
	} {
		p, err := build()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// nodeFilters: the first whole-node filter that rejects the node, or nil.
func nodeFilters(plugins []fwk.Plugin, pod *v1.Pod, ni *framework.NodeInfo, all []fwk.NodeInfo) []string {
	ctx := context.Background()
	state := framework.NewCycleState()
	skip := map[string]bool{}
	for _, p := range plugins {
		if pre, ok := p.(fwk.PreFilterPlugin); ok {
			_, st := pre.PreFilter(ctx, state, pod, all)
			if st.IsSkip() {
				skip[p.Name()] = true
			} else if !st.IsSuccess() {
				return st.Reasons()
			}
		}
	}
	for _, p := range plugins {
		if skip[p.Name()] {
			continue
		}
		if st := p.(fwk.FilterPlugin).Filter(ctx, state, pod, ni); !st.IsSuccess() {
			return st.Reasons()
		}
	}
	return nil
}

func runFile(path string, plugins []fwk.Plugin) ([]PodResult, error) {
	s, err := cluster.ReadScenario(path)
	if err != nil {
		return nil, err
	}
	c, err := cluster.BuildCluster(s)
	if err != nil {
		return nil, err
	}
	vgpu.SchedulePolicy = "" // legacy: deviceshare.SchedulePolicy unset
	if s.Policy != nil && s.Policy.Card != "" && s.Policy.Card != "legacy" {
		vgpu.SchedulePolicy = s.Policy.Card
	}
	weight := 0
	if s.Scheduler != nil && s.Scheduler.ScheduleWeight != nil {
		weight = *s.Scheduler.ScheduleWeight
	}
	client := fake.NewSimpleClientset()
	for _, pod := range c.Pods {
		if _, err := client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(c.Nodes))
	infos := map[string]*framework.NodeInfo{}
	gpus := map[string]*vgpu.GPUDevices{}
	for _, node := range c.Nodes {
		names = append(names, node.Name)
		ni := framework.NewNodeInfo()
		ni.SetNode(node)
		infos[node.Name] = ni
		if gs := vgpu.NewGPUDevices(node.Name, node); gs != nil {
			gpus[node.Name] = gs
		}
	}
	sort.Strings(names)
	all := make([]fwk.NodeInfo, 0, len(names))
	for _, name := range names {
		all = append(all, infos[name])
	}
	for _, pod := range c.Pods {
		if pod.Spec.NodeName == "" {
			continue
		}
		infos[pod.Spec.NodeName].AddPod(pod)
		if gs := gpus[pod.Spec.NodeName]; gs != nil {
			gs.AddResource(pod) // NodeInfo.addResource, as the cache adds a bound pod
		}
	}
	// Volcano's priority plugin orders jobs by priority; equal ones by creation time.
	queue := append([]*v1.Pod(nil), c.Pending...)
	sort.SliceStable(queue, func(a, b int) bool { return *queue[a].Spec.Priority > *queue[b].Spec.Priority })
	var out []PodResult
	for _, pod := range queue {
		r := PodResult{Pod: pod.Namespace + "/" + pod.Name}
		best, tied, reason := choose(plugins, pod, names, infos, all, gpus, weight)
		if best == "" {
			r.Reason = &reason
			out = append(out, r)
			continue
		}
		if gs := gpus[best]; gs != nil && gs.HasDeviceRequest(pod) {
			if err := gs.Allocate(client, pod); err != nil {
				return nil, fmt.Errorf("pod %s: Allocate on %s: %w", r.Pod, best, err)
			}
		}
		cards, err := cardsOf(c, pod)
		if err != nil {
			return nil, err
		}
		placed := pod.DeepCopy()
		placed.Spec.NodeName = best
		infos[best].AddPod(placed)
		node := best
		r.Node, r.Cards, r.Tied = &node, cards, tied
		out = append(out, r)
	}
	// In scenario order, as the session harness writes them.
	order := map[string]int{}
	for i, pod := range c.Pending {
		order[pod.Namespace+"/"+pod.Name] = i
	}
	sort.Slice(out, func(a, b int) bool { return order[out[a].Pod] < order[out[b].Pod] })
	if out == nil {
		out = []PodResult{}
	}
	return out, nil
}

// choose: the node the pod goes to ("" if none), the nodes tied with it, or why none.
func choose(plugins []fwk.Plugin, pod *v1.Pod, names []string, infos map[string]*framework.NodeInfo,
	all []fwk.NodeInfo, gpus map[string]*vgpu.GPUDevices, weight int) (string, []string, string) {
	counts := map[string]int{}
	best := math.Inf(-1)
	var tied []string
	for _, name := range names {
		reasons := idleCheck(pod, infos[name])
		if reasons == nil {
			reasons = nodeFilters(plugins, pod, infos[name], all)
		}
		if reasons != nil {
			for _, r := range reasons {
				counts[r]++
			}
			continue
		}
		score := 0.0
		if gs := gpus[name]; gs != nil && gs.HasDeviceRequest(pod) {
			code, msg, err := gs.FilterNode(pod, vgpu.SchedulePolicy)
			if err != nil || code != devices.Success {
				counts[msg]++
				continue
			}
			if weight > 0 {
				s := gs.ScoreNode(pod, vgpu.SchedulePolicy)
				score = float64(int64(math.Floor(s+0.5))) * float64(weight)
			}
		}
		switch {
		case score > best:
			best, tied = score, []string{name}
		case score == best:
			tied = append(tied, name)
		}
	}
	if len(tied) == 0 {
		parts := make([]string, 0, len(counts))
		for r, n := range counts {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
		sort.Strings(parts)
		return "", nil, fmt.Sprintf("0/%d nodes are unavailable: %s.", len(names), strings.Join(parts, ", "))
	}
	return tied[0], tied, ""
}

// cardsOf maps the allocation Allocate wrote on the pod back to the scenario's card indices.
func cardsOf(c *cluster.Cluster, pod *v1.Pod) ([]int, error) {
	cards := []int{}
	for _, container := range strings.Split(pod.Annotations[cluster.IDsAnnotation], ";") {
		for _, entry := range strings.Split(container, ":") {
			uuid, _, ok := strings.Cut(entry, ",")
			if !ok {
				continue
			}
			index, known := c.CardOf[uuid]
			if !known {
				return nil, fmt.Errorf("pod %s/%s: unknown card %q", pod.Namespace, pod.Name, uuid)
			}
			cards = append(cards, index)
		}
	}
	return cards, nil
}

// idleCheck is allocate's resource check before the predicates (volcano v1.15.1
// actions/allocate/allocate.go predicate: task.InitResreq.LessEqualWithResourcesName(
// node.FutureIdle(), api.Zero), "Insufficient " + the first resource short), over the same
// quantities: a pod's requests plus one "pods" (api/pod_info.go GetPodResourceRequest), a
// node's allocatable less every pod on it (NodeInfo.AddTask; no pod here is releasing or
// pipelined, so FutureIdle is Idle). Every dimension the pod has is checked, a request of
// zero too: a node whose pods request more cpu than it has refuses a pod asking none.
// Upstream lists cpu, memory, then the scalars in map order; here the scalars sorted.
func idleCheck(pod *v1.Pod, ni *framework.NodeInfo) []string {
	idle := map[v1.ResourceName]int64{}
	for name, q := range ni.Node().Status.Allocatable {
		idle[name] = amount(name, q)
	}
	for _, pi := range ni.GetPods() {
		for name, n := range asks(pi.GetPod()) {
			idle[name] -= n
		}
	}
	want := asks(pod)
	names := make([]string, 0, len(want))
	for name := range want {
		if name != v1.ResourceCPU && name != v1.ResourceMemory {
			names = append(names, string(name))
		}
	}
	sort.Strings(names)
	for _, name := range append([]string{"cpu", "memory"}, names...) {
		n, asked := want[v1.ResourceName(name)]
		if asked && n > idle[v1.ResourceName(name)] {
			return []string{"Insufficient " + name}
		}
	}
	return nil
}

// asks is a pod's InitResreq: its one container's requests (cpu, memory and the scalars
// always present, zero where not asked) and one pod slot.
func asks(pod *v1.Pod) map[v1.ResourceName]int64 {
	out := map[v1.ResourceName]int64{v1.ResourceCPU: 0, v1.ResourceMemory: 0, v1.ResourcePods: 1}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Requests {
			out[name] += amount(name, q)
		}
	}
	return out
}

// amount is a quantity as api.NewResource reads it: millicores, bytes, pods, milli-units.
func amount(name v1.ResourceName, q resource.Quantity) int64 {
	switch name {
	case v1.ResourceMemory, v1.ResourcePods:
		return q.Value()
	}
	return q.MilliValue()
}
