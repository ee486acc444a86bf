package main

// The -preempt mode: kube-scheduler's DefaultPreemption (pkg/scheduler/framework/plugins/
// defaultpreemption, pkg/scheduler/framework/preemption) as a framework runs it, for the
// Pending pods the advisor's cycle left unplaced (docs/conformance.md).
//
// The pods go in the scheduling queue's order (PrioritySort: priority, then creation). A pod
// the advisor's cycle placed (the harness copy's `placed`) is bound where it was placed; any
// other runs the in-tree filters with the nominated pods (RunFilterPluginsWithNominatedPods),
// then the PostFilter. HAMi's extender is the GPU filter and has no preempt verb: a node
// that passes every in-tree filter is one the extender rejected (the cycle left the pod
// unplaced), Unschedulable as findNodesThatPassExtenders marks it. A nomination evicts its
// victims and counts the preemptor on its node for the pods after it, as the nominator
// does once the victims' deletions are seen.

import (
	"context"
	"math"
	"sort"
	"sync"
	"xgpu-insight/conformance/cluster/scenario"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeunschedulable"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// extenderReason marks a node that passes the in-tree filters: HAMi's extender refused it.
const extenderReason = "extender: the GPU filter refused the node"

// Preemption: one unplaced pod's PostFilter. Verdict: not-eligible, no-victims, evicts; or
// fits, a MIG pod the in-tree filters pass on the nodes InTree (no PostFilter runs).
// Ties: the nodes pickOneNodeForPreemption could have picked (it takes the first of a
// map's keys among equal scores), the nominated one among them.
type Preemption struct {
	Pod     string   `json:"pod"`
	Verdict string   `json:"verdict"`
	Node    string   `json:"node,omitempty"`
	Victims []string `json:"victims"`
	Ties    []string `json:"ties,omitempty"`
	// Candidates: every node DryRunPreemption found, with its victims.
	Candidates map[string][]string `json:"candidates,omitempty"`
	Status     string              `json:"status"`
	// InTree: nodes that pass every in-tree filter (the extender's to refuse).
	InTree []string `json:"in_tree"`
}

type PreemptResult struct {
	Scenario    string       `json:"scenario"`
	Upstream    string       `json:"upstream"`
	Preemptions []Preemption `json:"preemptions"`
	Error       string       `json:"error,omitempty"`
}

// The queue and the plugins record metrics: registered once, read by nobody.
var registerMetrics = sync.OnceFunc(metrics.Register)

func runPreemptFile(path string) PreemptResult {
	registerMetrics()
	res := PreemptResult{Scenario: path, Upstream: upstream, Preemptions: []Preemption{}}
	s, err := scenario.ReadWithMIG(path)
	if err == nil {
		var objs *objects
		if objs, err = build(s); err == nil {
			res.Preemptions, err = preemptAll(objs, s.Placed)
		}
	}
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

// recorder: what the PostFilter chose, read from the Evaluator's hooks.
type recorder struct {
	victims    []*v1.Pod
	candidates map[string]*extenderv1.Victims
}

// recording wraps the plugin's preemption.Interface to see the candidates it scores.
type recording struct {
	preemption.Interface
	rec *recorder
}

func (r recording) CandidatesToVictimsMap(c []preemption.Candidate) map[string]*extenderv1.Victims {
	m := r.Interface.CandidatesToVictimsMap(c)
	r.rec.candidates = m
	return m
}

func preemptAll(objs *objects, placed map[string]string) ([]Preemption, error) {
	ctx := context.Background()
	logger := klog.FromContext(ctx)
	cs := clientsetfake.NewClientset()
	factory := informers.NewSharedInformerFactory(cs, 0)
	pods := factory.Core().V1().Pods().Informer().GetStore()
	for _, p := range append(append([]*v1.Pod(nil), objs.bound...), objs.pending...) {
		if err := pods.Add(p); err != nil {
			return nil, err
		}
	}
	pdbStore := factory.Policy().V1().PodDisruptionBudgets().Informer().GetStore()
	for _, pdb := range objs.pdbs {
		if err := pdbStore.Add(pdb); err != nil {
			return nil, err
		}
	}
	sorter, err := queuesort.New(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	nominator := internalqueue.NewSchedulingQueue(sorter.(fwk.QueueSortPlugin).Less, factory)
	queue := append([]*v1.Pod(nil), objs.pending...)
	sort.SliceStable(queue, func(i, j int) bool {
		return corev1helpers.PodPriority(queue[i]) > corev1helpers.PodPriority(queue[j])
	})
	bound := append([]*v1.Pod(nil), objs.bound...)
	out := []Preemption{}
	for _, pod := range queue {
		key := pod.Namespace + "/" + pod.Name
		if node, ok := placed[key]; ok {
			p := pod.DeepCopy()
			p.Spec.NodeName = node
			bound = append(bound, p)
			continue
		}
		rec := &recorder{}
		f, err := newFramework(ctx, cs, factory, nominator, internalcache.NewSnapshot(bound, objs.nodes), rec)
		if err != nil {
			return nil, err
		}
		r, err := preemptOne(ctx, f, pod, rec)
		if err != nil {
			return nil, err
		}
		r.Pod = key
		out = append(out, r)
		if r.Node == "" {
			continue
		}
		gone := map[string]bool{}
		for _, v := range rec.victims {
			gone[v.Namespace+"/"+v.Name] = true
		}
		kept := bound[:0:0]
		for _, p := range bound {
			if !gone[p.Namespace+"/"+p.Name] {
				kept = append(kept, p)
			}
		}
		bound = kept
		// Back in the queue with its nomination, as handleSchedulingFailure leaves it: the
		// nominator finds the pod's spec there (nominatedPodToInfo), else counts a bare one.
		nominated := pod.DeepCopy()
		nominated.Status.NominatedNodeName = r.Node
		nominator.Add(logger, nominated)
	}
	return out, nil
}

func preemptOne(ctx context.Context, f framework.Framework, pod *v1.Pod, rec *recorder) (Preemption, error) {
	r := Preemption{Victims: []string{}, InTree: []string{}}
	state := framework.NewCycleState()
	statuses := framework.NewDefaultNodeToStatus()
	all, err := f.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return r, err
	}
	preRes, st, _ := f.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		// findNodesThatFitPod: a PreFilter rejection is every node's status.
		statuses.SetAbsentNodesStatus(st)
	} else {
		for _, ni := range all {
			name := ni.Node().Name
			if !preRes.AllNodes() && !preRes.NodeNames.Has(name) {
				statuses.Set(name, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) [NodeAffinity]"))
				continue
			}
			if fs := f.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni); !fs.IsSuccess() {
				statuses.Set(name, fs)
				continue
			}
			r.InTree = append(r.InTree, name)
			statuses.Set(name, fwk.NewStatus(fwk.Unschedulable, extenderReason))
		}
	}
	if isMIG(pod) && len(r.InTree) > 0 {
		// No extender is interested in a MIG pod (HAMi's managedResources name none of
		// nvidia.com/mig-*: extender.go IsInterested): the in-tree filters decide, it is
		// scheduled, no PostFilter runs. Not bound here: the advisor counts it nowhere.
		r.Verdict = "fits"
		return r, nil
	}
	result, st := f.RunPostFilterPlugins(ctx, state, pod, statuses)
	r.Status = st.Message()
	switch {
	case pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever:
		r.Verdict = "not-eligible"
	case st.IsSuccess() && result != nil && result.NominatingInfo != nil && result.NominatedNodeName != "":
		r.Verdict = "evicts"
		r.Node = result.NominatedNodeName
		r.Victims = names(rec.victims)
		if rec.candidates == nil { // one candidate: SelectCandidate scores none
			rec.candidates = map[string]*extenderv1.Victims{r.Node: {Pods: rec.victims}}
		}
		r.Ties = ties(rec.candidates, r.Node)
		r.Candidates = map[string][]string{}
		for node, v := range rec.candidates {
			r.Candidates[node] = names(v.Pods)
		}
	default:
		r.Verdict = "no-victims"
	}
	return r, nil
}

// ties: the candidates whose victims score as the nominated node's do on every one of
// pickOneNodeForPreemption's criteria, which then takes the first of a map's keys. A
// victim without a start time counts as started now in each call (GetPodStartTime):
// here they count alike.
func ties(candidates map[string]*extenderv1.Victims, chosen string) []string {
	score := func(v *extenderv1.Victims) [5]int64 {
		var sum int64
		earliest := int64(math.MaxInt64)
		for _, p := range v.Pods {
			sum += int64(corev1helpers.PodPriority(p)) + int64(math.MaxInt32+1)
		}
		top := corev1helpers.PodPriority(v.Pods[0])
		for _, p := range v.Pods {
			if corev1helpers.PodPriority(p) == top && p.Status.StartTime != nil {
				earliest = min(earliest, p.Status.StartTime.UnixNano())
			}
		}
		return [5]int64{v.NumPDBViolations, int64(top), sum, int64(len(v.Pods)), earliest}
	}
	want, ok := candidates[chosen]
	if !ok {
		return []string{chosen}
	}
	out := []string{}
	for name, v := range candidates {
		if score(v) == score(want) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// newFramework: the default profile's four node filters, PrioritySort and DefaultPreemption
// with its default arguments, over `snapshot`; the Evaluator records instead of deleting.
func newFramework(ctx context.Context, cs *clientsetfake.Clientset, factory informers.SharedInformerFactory,
	nominator fwk.PodNominator, snapshot *internalcache.Snapshot, rec *recorder) (framework.Framework, error) {
	feats := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	feats.EnableAsyncPreemption = false // victims chosen in the call, not in a goroutine
	registry := frameworkruntime.Registry{
		queuesort.Name:         queuesort.New,
		defaultbinder.Name:     defaultbinder.New,
		nodeunschedulable.Name: frameworkruntime.FactoryAdapter(feats, nodeunschedulable.New),
		nodeaffinity.Name:      frameworkruntime.FactoryAdapter(feats, nodeaffinity.New),
		tainttoleration.Name:   frameworkruntime.FactoryAdapter(feats, tainttoleration.New),
		noderesources.Name:     frameworkruntime.FactoryAdapter(feats, noderesources.NewFit),
		defaultpreemption.Name: func(ctx context.Context, args runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
			pl, err := defaultpreemption.New(ctx, args, fh, feats)
			if err != nil {
				return nil, err
			}
			pl.Evaluator.Interface = recording{pl.Evaluator.Interface, rec}
			pl.Evaluator.PreemptPod = func(_ context.Context, c preemption.Candidate, _, _ *v1.Pod, _ string) error {
				rec.victims = c.Victims().Pods
				return nil
			}
			return pl, nil
		},
	}
	set := func(names ...string) config.PluginSet {
		ps := config.PluginSet{}
		for _, n := range names {
			ps.Enabled = append(ps.Enabled, config.Plugin{Name: n})
		}
		return ps
	}
	filters := []string{nodeunschedulable.Name, nodeaffinity.Name, tainttoleration.Name, noderesources.Name}
	profile := &config.KubeSchedulerProfile{
		SchedulerName: "default-scheduler",
		Plugins: &config.Plugins{
			QueueSort:  set(queuesort.Name),
			PreFilter:  set(nodeaffinity.Name, noderesources.Name),
			Filter:     set(filters...),
			PostFilter: set(defaultpreemption.Name),
			Bind:       set(defaultbinder.Name),
		},
		PluginConfig: []config.PluginConfig{
			{Name: noderesources.Name, Args: fitArgs()},
			{Name: nodeaffinity.Name, Args: &config.NodeAffinityArgs{}},
			{Name: defaultpreemption.Name, Args: &config.DefaultPreemptionArgs{
				MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100, // v1 defaults
			}},
		},
	}
	return frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithClientSet(cs),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithPodNominator(nominator),
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
	)
}

func names(pods []*v1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}
