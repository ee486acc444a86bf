// Command kube runs kube-scheduler's own filter plugins (k8s.io/kubernetes v1.35.3,
// pkg/scheduler/framework/plugins) on a scenario file: for every Pending pod and every
// node, the verdict of NodeUnschedulable, NodeAffinity, TaintToleration and
// NodeResourcesFit, in the order the default profile runs them, stopping at the first that
// rejects the node (framework.RunFilterPlugins). The nodes hold the scenario's running pods
// and other_pods; the GPU filter of each profile is not kube-scheduler's and is left out.
// MIG instances are kept (mig.go): the NVIDIA device plugin's mixed strategy advertises
// them as extended resources NodeResourcesFit counts.
//
//	kube SCENARIO...
//	kube -preempt SCENARIO...  (DefaultPreemption's PostFilter: preempt.go)
//
// One JSON document per scenario, one per line (docs/conformance.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeunschedulable"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"

	"xgpu-insight/conformance/cluster/scenario"
)

const upstream = "k8s.io/kubernetes v1.35.3"

// PodResult: per node, the first rejecting filter's reasons; a node that passes is absent.
type PodResult struct {
	Pod   string              `json:"pod"`
	Nodes map[string][]string `json:"nodes"`
}

type Result struct {
	Scenario string      `json:"scenario"`
	Upstream string      `json:"upstream"`
	Filters  []string    `json:"filters"`
	Pods     []PodResult `json:"pods"`
	Error    string      `json:"error,omitempty"`
}

type filterPlugin interface {
	fwk.FilterPlugin
}

type preFilterPlugin interface {
	fwk.PreFilterPlugin
}

func main() {
	preempt := flag.Bool("preempt", false, "run DefaultPreemption's PostFilter (preempt.go)")
	flag.Parse()
	if *preempt {
		failed := func(r PreemptResult) bool { return r.Error != "" }
		os.Exit(scenario.EncodeEach(os.Stdout, flag.Args(), runPreemptFile, failed))
	}
	plugins, err := newPlugins()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	run := func(path string) Result { return runFile(path, plugins) }
	failed := func(r Result) bool { return r.Error != "" }
	os.Exit(scenario.EncodeEach(os.Stdout, flag.Args(), run, failed))
}

// newPlugins builds the four filters as the default profile configures them, with the
// release's default feature gates (pod-level resources, sidecars as v1.35.3 ships them).
func newPlugins() ([]fwk.Plugin, error) {
	ctx := context.Background()
	feats := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	var out []fwk.Plugin
	for _, build := range []func() (fwk.Plugin, error){
		func() (fwk.Plugin, error) { return nodeunschedulable.New(ctx, nil, nil, feats) },
		func() (fwk.Plugin, error) { return nodeaffinity.New(ctx, &config.NodeAffinityArgs{}, nil, feats) },
		func() (fwk.Plugin, error) { return tainttoleration.New(ctx, nil, nil, feats) },
		func() (fwk.Plugin, error) { return noderesources.NewFit(ctx, fitArgs(), nil, feats) },
	} {
		p, err := build()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func fitArgs() *config.NodeResourcesFitArgs {
	return &config.NodeResourcesFitArgs{ScoringStrategy: &config.ScoringStrategy{
		Type:      config.LeastAllocated,
		Resources: []config.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}},
	}}
}

func runFile(path string, plugins []fwk.Plugin) Result {
	res := Result{Scenario: path, Upstream: upstream, Pods: []PodResult{}}
	for _, p := range plugins {
		res.Filters = append(res.Filters, p.Name())
	}
	s, err := scenario.ReadWithMIG(path)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	objs, err := build(s)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	nodes, pending := objs.nodeInfos(), objs.pending
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	all := make([]fwk.NodeInfo, 0, len(names))
	for _, name := range names {
		all = append(all, nodes[name])
	}
	ctx := context.Background()
	for _, pod := range pending {
		r := PodResult{Pod: pod.Namespace + "/" + pod.Name, Nodes: map[string][]string{}}
		state := framework.NewCycleState()
		skip := map[string]bool{}
		for _, p := range plugins {
			if pre, ok := p.(preFilterPlugin); ok {
				_, st := pre.PreFilter(ctx, state, pod, all)
				if st.IsSkip() {
					skip[p.Name()] = true
				} else if !st.IsSuccess() {
					// A PreFilter rejection rejects every node with its reasons.
					for _, name := range names {
						r.Nodes[name] = st.Reasons()
					}
				}
			}
		}
		for _, ni := range all {
			name := ni.Node().Name
			if _, rejected := r.Nodes[name]; rejected {
				continue
			}
			for _, p := range plugins {
				if skip[p.Name()] {
					continue
				}
				st := p.(filterPlugin).Filter(ctx, state, pod, ni)
				if !st.IsSuccess() {
					r.Nodes[name] = st.Reasons()
					break
				}
			}
		}
		res.Pods = append(res.Pods, r)
	}
	return res
}

var unbounded = map[v1.ResourceName]string{
	// Far above any scenario's sums (int64 millicores and bytes hold them exactly).
	v1.ResourceCPU: "1e12", v1.ResourceMemory: "1e18", v1.ResourcePods: "1e9",
}

// objects: the scenario as the API objects kube-scheduler reads. Pods carry only cpu and
// memory: the GPU is each profile's own filter.
type objects struct {
	nodes   []*v1.Node
	bound   []*v1.Pod // running pods and each node's other_pods and resident_pods
	pending []*v1.Pod // in scenario order
	pdbs    []*policy.PodDisruptionBudget
}

// build reads the scenario's nodes and pods. other_pods and resident_pods get the highest
// priority: the advisor knows none of theirs and never counts them as victims.
func build(s *scenario.Scenario) (*objects, error) {
	out := &objects{}
	known := map[string]bool{}
	for _, n := range s.Nodes {
		alloc := v1.ResourceList{}
		for name, text := range unbounded {
			alloc[name] = resource.MustParse(text)
		}
		for key, text := range n.Allocatable {
			q, err := resource.ParseQuantity(string(text))
			if err != nil {
				return nil, fmt.Errorf("nodes[%s].allocatable.%s: %w", n.Name, key, err)
			}
			alloc[v1.ResourceName(key)] = q
		}
		if err := scenario.AddMIG(alloc, n); err != nil {
			return nil, err
		}
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
			Spec:       v1.NodeSpec{Unschedulable: n.Unschedulable},
			Status:     v1.NodeStatus{Capacity: alloc, Allocatable: alloc},
		}
		for _, t := range n.Taints {
			node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: t.Key, Value: t.Value, Effect: v1.TaintEffect(t.Effect)})
		}
		out.nodes = append(out.nodes, node)
		known[n.Name] = true
		for _, o := range append(append([]scenario.OtherPod(nil), n.OtherPods...), n.ResidentPods...) {
			pod, err := makePod(scenario.Pod{Name: o.Name, Resources: o.Resources, Priority: math.MaxInt32}, n.Name)
			if err != nil {
				return nil, err
			}
			out.bound = append(out.bound, pod)
		}
	}
	budgets := map[[2]string]int32{}
	for _, p := range s.Pods {
		node := ""
		if p.Node != nil {
			node = *p.Node
		}
		pod, err := makePod(p, node)
		if err != nil {
			return nil, err
		}
		if name, allowed, ok := budget(p.Annotations); ok {
			pod.Labels = withLabel(pod.Labels, budgetLabel, name)
			key := [2]string{pod.Namespace, name}
			if _, seen := budgets[key]; !seen {
				budgets[key] = allowed
			}
		}
		if node == "" {
			out.pending = append(out.pending, pod)
			continue
		}
		if !known[node] {
			return nil, fmt.Errorf("pod %s: no node %s", p.Name, node)
		}
		out.bound = append(out.bound, pod)
	}
	for key, allowed := range budgets {
		out.pdbs = append(out.pdbs, &policy.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: key[0], Name: key[1]},
			Spec: policy.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{
				MatchLabels: map[string]string{budgetLabel: key[1]},
			}},
			Status: policy.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
		})
	}
	sort.Slice(out.pdbs, func(i, j int) bool {
		return out.pdbs[i].Namespace+"/"+out.pdbs[i].Name < out.pdbs[j].Namespace+"/"+out.pdbs[j].Name
	})
	return out, nil
}

// nodeInfos: each node with its bound pods, by name.
func (o *objects) nodeInfos() map[string]*framework.NodeInfo {
	nodes := map[string]*framework.NodeInfo{}
	for _, n := range o.nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		nodes[n.Name] = ni
	}
	for _, p := range o.bound {
		nodes[p.Spec.NodeName].AddPod(p)
	}
	return nodes
}

// The advisor's PodDisruptionBudget annotation ("name:allowed", docs/design.md §8) and
// the label by which the harness's PodDisruptionBudget of that name selects its pods.
const (
	budgetAnnotation = "xgpu.io/disruption-budget"
	budgetLabel      = "xgpu-insight.conformance/budget"
)

// budget reads the annotation as the advisor does (model.disruption_budget): a count that
// does not parse allows none.
func budget(annotations map[string]string) (string, int32, bool) {
	value, ok := annotations[budgetAnnotation]
	if !ok {
		return "", 0, false
	}
	value = strings.TrimSpace(value)
	name, allowed := "", value
	if i := strings.LastIndex(value, ":"); i >= 0 {
		name, allowed = value[:i], value[i+1:]
	}
	n, err := strconv.Atoi(allowed)
	if err != nil {
		name, n = value, 0
	}
	if name == "" {
		name = "?"
	}
	return name, int32(max(n, 0)), true
}

func withLabel(labels map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

func makePod(p scenario.Pod, node string) (*v1.Pod, error) {
	ns, name, ok := strings.Cut(p.Name, "/")
	if !ok {
		return nil, fmt.Errorf("pod %q: a name is namespace/pod", p.Name)
	}
	requests := v1.ResourceList{}
	for key, text := range p.Resources {
		q, err := resource.ParseQuantity(string(text))
		if err != nil {
			return nil, fmt.Errorf("pod %s resources.%s: %w", p.Name, key, err)
		}
		requests[v1.ResourceName(key)] = q
	}
	limits := scenario.MigRequest(p, requests)
	priority := p.Priority
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(ns + "-" + name), Name: name, Namespace: ns, Labels: p.Labels},
		Spec: v1.PodSpec{
			NodeName:     node,
			NodeSelector: p.NodeSelector,
			Containers:   []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: requests, Limits: limits}}},
			Affinity:     affinity(p.Affinity),
			Priority:     &priority,
		},
	}
	if p.PreemptionPolicy != "" {
		policy := v1.PreemptionPolicy(p.PreemptionPolicy)
		pod.Spec.PreemptionPolicy = &policy
	}
	if p.Started != "" {
		when, err := time.Parse(time.RFC3339, p.Started)
		if err != nil {
			return nil, fmt.Errorf("pod %s started: %w", p.Name, err)
		}
		pod.Status.StartTime = &metav1.Time{Time: when}
	}
	for _, t := range p.Tolerations {
		op := v1.TolerationOperator(t.Operator)
		if op == "" {
			op = v1.TolerationOpEqual
		}
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, v1.Toleration{
			Key: t.Key, Operator: op, Value: t.Value, Effect: v1.TaintEffect(t.Effect),
		})
	}
	return pod, nil
}

func affinity(a *scenario.Affinity) *v1.Affinity {
	if a == nil || a.Node == nil || a.Node.Required == nil {
		return nil
	}
	sel := &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{}}
	for _, t := range a.Node.Required {
		term := v1.NodeSelectorTerm{}
		for _, r := range t.MatchExpressions {
			term.MatchExpressions = append(term.MatchExpressions, v1.NodeSelectorRequirement{
				Key: r.Key, Operator: v1.NodeSelectorOperator(r.Operator), Values: r.Values,
			})
		}
		for _, r := range t.MatchFields {
			term.MatchFields = append(term.MatchFields, v1.NodeSelectorRequirement{
				Key: r.Key, Operator: v1.NodeSelectorOperator(r.Operator), Values: r.Values,
			})
		}
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, term)
	}
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
}
