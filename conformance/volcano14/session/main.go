// Command volcano runs Volcano v1.14.1's own scheduler session on a scenario file and
// prints what it decided per pod and per PodGroup, as JSON (docs/conformance.md).
//
// v1.14.1, not v1.15.1: the module proxy serves no volcano.sh/apis that v1.15.1's
// pkg/scheduler builds with; docs/conformance.md lists what differs between the two in the
// code the comparison reaches, and the clusters it runs keep to what both decide alike.
//
// The session is built as Volcano's unit tests build theirs (pkg/scheduler/uthelper
// helper.go createSchedulerCache: cache.NewCustomMockSchedulerCache over a fake clientset,
// util.FakeBinder and util.FakeEvictor), with the configuration read by Volcano's own
// scheduler.UnmarshalSchedulerConf.
//
//	volcano [--scheduler volcano-vgpu] SCENARIO...
//
// One JSON document per scenario, one per line.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"volcano.sh/apis/pkg/apis/scheduling"
	controllerutil "volcano.sh/volcano/pkg/controllers/util"
	"volcano.sh/volcano/pkg/scheduler"
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/metrics"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
	"volcano.sh/volcano/pkg/scheduler/util"
	"xgpu-insight/conformance/cluster"
	"xgpu-insight/conformance/cluster/scenario"
)

const upstream = "volcano.sh/volcano v1.14.1"

// PodResult is one pod's outcome, in the shape the comparison reads.
type PodResult struct {
	Pod    string   `json:"pod"`
	Node   *string  `json:"node"`
	Cards  []int    `json:"cards"`
	Reason *string  `json:"reason"`
	Tied   []string `json:"tied"` // the nodes upstream would have drawn from at random
	// What preempt or reclaim did for it: the node they pipelined it on and the victims
	// committed for it (evictions.go); nil when neither pipelined it.
	Preempt *Preempted `json:"preempt"`
	// What its cause is read from (session_compare.py): its job (namespace/name of the
	// PodGroup), its own fit error (job.NodesFitErrors[task.UID], recorded only for a task
	// allocate tried on the nodes), whether allocate popped it (asked its queue,
	// ssn.Allocatable) and whether its queue refused it there (no fit error recorded).
	Job          string  `json:"job"`
	FitError     *string `json:"fit_error"`
	Tried        bool    `json:"tried"`
	QueueRefused bool    `json:"queue_refused"`
}

// GroupResult is one PodGroup with Pending members: its phase in the session, and the
// advisor's words for what allocate did with it (placed: a member is placed and stays;
// rolled-back: members were placed, then discarded; admitted: none was placed;
// not-admitted: enqueue left it Pending).
type GroupResult struct {
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	State     string `json:"state"`
	Condition string `json:"condition"`
}

type Result struct {
	Scenario  string        `json:"scenario"`
	Scheduler string        `json:"scheduler"`
	Upstream  string        `json:"upstream"`
	Actions   []string      `json:"actions"`
	Pods      []PodResult   `json:"pods"`
	Groups    []GroupResult `json:"groups"`
	Evicted   []string      `json:"evicted"`
	// Pods asking vGPUs whose placement a discarded statement undid: v1.14.1 keeps their
	// cards taken for the rest of the session (docs/conformance.md), v1.15.1 gives them back.
	Leaked []string `json:"leaked"`
	// Evictions committed for no pipelined preemptor (v1.14.1 keeps a node's evictions when
	// the preemptor then fits neither there nor anywhere: docs/conformance.md).
	Stray []Victim `json:"stray"`
	// The queues v1.14.1's preempt visits, in Go's map order (preemptQueues).
	PreemptQueues []string `json:"preempt_queues"`
	// Whether v1.14.1's reclaim evicted a victim the node did not need (Preempted.Unneeded)
	// in a statement kept or discarded: from then on the session is not v1.15.1's.
	ReclaimUnneeded bool   `json:"reclaim_unneeded"`
	Error           string `json:"error,omitempty"`
}

func main() {
	profile := flag.String("scheduler", "volcano-vgpu", "the advisor profile whose upstream runs")
	flag.Parse()
	if *profile != "volcano-vgpu" {
		fmt.Fprintf(os.Stderr, "volcano: profile %s is not run by this harness (volcano-vgpu only)\n", *profile)
		os.Exit(2)
	}
	quietLogs()
	metrics.InitKubeSchedulerRelatedMetrics()
	framework.RegisterPluginBuilder(tiesPluginName, func(framework.Arguments) framework.Plugin { return ties })
	framework.RegisterPluginBuilder(askedPluginName, func(framework.Arguments) framework.Plugin { return asked{} })
	// FakeEvictor prints to stdout; the JSON goes to the real stdout only.
	out := os.Stdout
	os.Stdout = os.Stderr
	run := func(path string) Result { return runFile(path, *profile) }
	failed := func(r Result) bool { return r.Error != "" }
	os.Exit(scenario.EncodeEach(out, flag.Args(), run, failed))
}

// quietLogs silences Volcano's logs; XGPU_CONFORMANCE_V=5 sends them to stderr at that
// verbosity instead (to read why upstream decided as it did).
func quietLogs() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if v := os.Getenv("XGPU_CONFORMANCE_V"); v != "" {
		_ = fs.Set("logtostderr", "true")
		_ = fs.Set("v", v)
		return
	}
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	_ = fs.Set("v", "0")
	klog.SetOutput(io.Discard)
}

func runFile(path, profile string) (res Result) {
	res = Result{Scenario: path, Scheduler: profile, Upstream: upstream, Pods: []PodResult{},
		Groups: []GroupResult{}, Evicted: []string{}, Leaked: []string{}, Stray: []Victim{}, PreemptQueues: []string{}}
	s, err := cluster.ReadScenarioWithMIG(path) // MIG instances: the node sums' scalars
	if err != nil {
		res.Error = err.Error()
		return res
	}
	c, err := cluster.BuildCluster(s)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	actions := []string{"enqueue", "allocate", "backfill"} // docs/design.md §10.1 default
	if s.Scheduler != nil && s.Scheduler.Actions != nil {
		actions = s.Scheduler.Actions
	}
	res.Actions = actions
	if err := run(c, s, actions, &res); err != nil {
		res.Error = err.Error()
	}
	return res
}

// schedulerConf is the volcano-scheduler-configmap the scenario describes: upstream's
// default (pkg/scheduler/util.go DefaultSchedulerConf) with the scenario's actions, gang
// options and overcommit factor, less the node scores the advisor does not model
// (nodeorder; docs/design.md §9.2), plus deviceshare with vGPUs on and the harness's tie
// recorder.
func schedulerConf(s *cluster.Scenario, actions []string) string {
	policy := "" // legacy: deviceshare.SchedulePolicy unset
	if s.Policy != nil && s.Policy.Card != "" && s.Policy.Card != "legacy" {
		policy = s.Policy.Card
	}
	weight := 0
	gang, overcommit, queues := "", "", "proportion"
	if sch := s.Scheduler; sch != nil {
		if sch.QueuePlugin != nil && *sch.QueuePlugin != "" {
			queues = *sch.QueuePlugin // capacity in proportion's place (flat: no enableHierarchy)
		}
		if sch.ScheduleWeight != nil {
			weight = *sch.ScheduleWeight
		}
		if sch.Gang != nil && sch.Gang.Preemptable != nil {
			gang += fmt.Sprintf("\n    enablePreemptable: %t", *sch.Gang.Preemptable)
		}
		if sch.Gang != nil && sch.Gang.JobStarving != nil {
			gang += fmt.Sprintf("\n    enableJobStarving: %t", *sch.Gang.JobStarving)
		}
		if sch.OvercommitFactor != nil {
			overcommit = fmt.Sprintf("\n    arguments:\n      overcommit-factor: %g", *sch.OvercommitFactor)
		}
	}
	return fmt.Sprintf(`actions: %q
tiers:
- plugins:
  - name: %s
  - name: priority
  - name: gang%s
  - name: conformance
- plugins:
  - name: overcommit%s
  - name: drf
  - name: predicates
  - name: %s
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolicy: %q
      deviceshare.ScheduleWeight: %d
  - name: %s
`, strings.Join(actions, ", "), askedPluginName, gang, overcommit, queues, policy, weight, tiesPluginName)
}

func run(c *cluster.Cluster, s *cluster.Scenario, actionNames []string, res *Result) error {
	actions, tiers, configurations, _, err := scheduler.UnmarshalSchedulerConf(schedulerConf(s, actionNames))
	if err != nil {
		return err
	}
	// NodeInfo reads a node's vGPUs only while vgpu.VGPUEnable is on (api/node_info.go
	// setNodeOthersResource), a global deviceshare's constructor sets at OpenSession: a
	// running scheduler has it from its first session, before the nodes of this one.
	vgpu.VGPUEnable = true
	binder := util.NewFakeBinder(1 << 16)
	evictor := util.NewFakeEvictor(1 << 16)
	sc := cache.NewCustomMockSchedulerCache("volcano", binder, evictor, &util.FakeStatusUpdater{}, nil, nil)
	stop := make(chan struct{})
	defer close(stop)
	sc.Run(stop)
	sc.WaitForCacheSync(stop)
	for _, n := range c.Nodes {
		sc.AddOrUpdateNode(n)
	}
	for _, pc := range c.Classes {
		sc.AddPriorityClass(pc)
	}
	for _, pod := range c.Pods {
		sc.AddPod(pod)
	}
	automaticMinResources(c)
	for _, pg := range c.Groups {
		sc.AddPodGroupV1beta1(pg)
	}
	for _, q := range c.Queues {
		sc.AddQueueV1beta1(q)
	}
	ready := new(atomic.Bool)
	ready.Store(true)
	sc.HyperNodesInfo = api.NewHyperNodesInfoWithCache(nil, nil, nil, ready)

	// Which actions run, as scheduler.go runOnce records it before each session: allocate
	// leaves a Pending group to enqueue when enqueue runs (allocate.go buildAllocateContext),
	// and moves it to Inqueue itself when it does not.
	conf.EnabledActionMap = make(map[string]bool, len(actions))
	for _, action := range actions {
		conf.EnabledActionMap[action.Name()] = true
	}
	ties.reset()
	ssn := framework.OpenSession(sc, tiers, configurations)
	defer framework.CloseSession(ssn)
	// deviceshare's Allocate patches the pod through the session's client: the pods must
	// exist there (the session works on its own snapshot, so the informer's echo is moot).
	client := ssn.KubeClient()
	for _, pod := range c.Pods {
		if _, err := client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, action := range actions {
		if action.Name() == "preempt" {
			res.PreemptQueues = preemptQueues(ssn)
		}
		ties.action = action.Name()
		action.Initialize()
		action.Execute(ssn)
		action.UnInitialize()
	}
	ties.action = ""
	// The cache evicts in a goroutine (cache.go SchedulerCache.Evict): wait for the
	// evictions the statements committed, as uthelper's CheckEvict does.
	committed := map[string]bool{}
	for range ties.evictions.count() {
		select {
		case key := <-evictor.Channel:
			committed[key] = true
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%d evictions committed, %d seen", ties.evictions.count(), len(committed))
		}
	}
	preempted := ties.evictions.preempted(committed)
	res.ReclaimUnneeded = ties.evictions.unneeded
	for _, v := range ties.evictions.unclaimed {
		if committed[v.Pod] {
			res.Stray = append(res.Stray, v)
		}
	}

	tasks := map[string]*api.TaskInfo{}
	jobs := map[string]*api.JobInfo{}
	for _, job := range ssn.Jobs {
		for _, task := range job.Tasks {
			tasks[task.Namespace+"/"+task.Name] = task
			jobs[task.Namespace+"/"+task.Name] = job
		}
	}
	pendingIn := map[api.JobID]bool{}
	placedIn := map[api.JobID]bool{}
	for _, pod := range c.Pending {
		key := pod.Namespace + "/" + pod.Name
		r := PodResult{Pod: key}
		task, job := tasks[key], jobs[key]
		if task == nil {
			reason := "not in the session (no job)"
			r.Reason = &reason
			res.Pods = append(res.Pods, r)
			continue
		}
		pendingIn[job.UID] = true
		r.Job = job.Namespace + "/" + job.Name
		r.Tried = ties.asked[task.UID]
		r.QueueRefused = r.Tried && !ties.passed[task.UID]
		if fe := job.NodesFitErrors[task.UID]; fe != nil {
			own := fe.Error()
			r.FitError = &own
		}
		if placed(task) {
			node := task.NodeName
			r.Node = &node
			placedIn[job.UID] = true
			cards, err := cardsOf(c, client, pod)
			if err != nil {
				return err
			}
			r.Cards = cards
			r.Tied = ties.of(task.UID, node)
		} else {
			reason := job.JobFitErrors
			if fe := job.NodesFitErrors[task.UID]; fe != nil {
				reason = fe.Error()
			}
			r.Reason = &reason
		}
		r.Preempt = preempted[key]
		res.Pods = append(res.Pods, r)
	}
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil || !pendingIn[job.UID] {
			continue
		}
		state := "admitted"
		for _, task := range job.Tasks {
			if ties.allocated[task.UID] > 0 {
				state = "rolled-back"
			}
		}
		if placedIn[job.UID] {
			state = "placed"
		}
		if job.PodGroup.Status.Phase == scheduling.PodGroupPending {
			state = "not-admitted" // enqueue ran and left it Pending: allocate never tried it
		}
		res.Groups = append(res.Groups, GroupResult{
			Name: job.Namespace + "/" + job.Name, Phase: string(job.PodGroup.Status.Phase),
			State: state, Condition: job.FitError(),
		})
	}
	sort.Slice(res.Groups, func(a, b int) bool { return res.Groups[a].Name < res.Groups[b].Name })
	res.Evicted = append(res.Evicted, evictor.Evicts()...)
	for key := range ties.leaked {
		res.Leaked = append(res.Leaked, key)
	}
	sort.Strings(res.Leaked)
	return nil
}

// automaticMinResources gives the PodGroup of a pod of no group the minResources Volcano's
// controller writes on it (controllers/podgroup pg_controller_handler.go
// createNormalPodPGIfNotExist: util.CalTaskRequests(pod, minMember), the pod's quota usage),
// which proportion's enqueue check and elastic share read.
func automaticMinResources(c *cluster.Cluster) {
	pods := map[string]*v1.Pod{}
	for _, pod := range c.Pods {
		if name := pod.Annotations[cluster.GroupAnnotation]; name == "pg-"+pod.Name {
			pods[pod.Namespace+"/"+name] = pod
		}
	}
	for _, pg := range c.Groups {
		if pod, ok := pods[pg.Namespace+"/"+pg.Name]; ok {
			min := controllerutil.CalTaskRequests(pod, pg.Spec.MinMember)
			pg.Spec.MinResources = &min
		}
	}
}

func placed(task *api.TaskInfo) bool {
	switch task.Status {
	case api.Allocated, api.Binding, api.Bound, api.Running:
		return task.NodeName != ""
	}
	return false
}

// cardsOf reads the allocation deviceshare wrote on the pod (vgpu.Allocate, through the
// client), card UUIDs back to the scenario's indices, in the order upstream chose them.
func cardsOf(c *cluster.Cluster, client kubernetes.Interface, pod *v1.Pod) ([]int, error) {
	got, err := client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cards := []int{}
	for _, container := range strings.Split(got.Annotations[cluster.IDsAnnotation], ";") {
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

const tiesPluginName = "xgpu-conformance-ties"

// tiePlugin is the harness's one addition to the session: a BestNodeFn that replaces the
// random draw of util.SelectBestNodeAndScore (pkg/scheduler/util/scheduler_helper.go:209,
// bestNodes[rand.Intn(len(bestNodes))]) with the first of the tied nodes by name, the
// advisor's documented choice, and records the tied set. Scores are upstream's own.
//
// It also counts what allocate did with each task (event handlers, read only): placements,
// and the placements of vGPU pods a discarded statement undid.
type tiePlugin struct {
	tied      map[api.TaskID][]string
	allocated map[api.TaskID]int
	leaked    map[string]bool
	action    string    // the action running, "" after the last
	evictions evictions // what preempt and reclaim did, in order
	// Tasks allocate asked ssn.Allocatable about (the asked plugin, first of the first
	// tier), and those every queue plugin let through (this plugin, last of the last):
	// asked and not passed is a task its queue refused (allocate.go `continue`s).
	asked  map[api.TaskID]bool
	passed map[api.TaskID]bool
}

var ties = &tiePlugin{}

func (p *tiePlugin) reset() {
	p.tied = map[api.TaskID][]string{}
	p.allocated = map[api.TaskID]int{}
	p.leaked = map[string]bool{}
	p.asked = map[api.TaskID]bool{}
	p.passed = map[api.TaskID]bool{}
	p.evictions = evictions{}
}

func (p *tiePlugin) Name() string { return tiesPluginName }

func (p *tiePlugin) OnSessionOpen(ssn *framework.Session) {
	ssn.AddAllocatableFn(p.Name(), func(_ *api.QueueInfo, task *api.TaskInfo) bool {
		if p.action == "allocate" {
			p.passed[task.UID] = true
		}
		return true
	})
	ssn.AddEventHandler(&framework.EventHandler{
		AllocateFunc: func(event *framework.Event) {
			if p.action == "preempt" || p.action == "reclaim" {
				p.evictions.allocated(event.Task, p.action, ssn.Nodes[event.Task.NodeName])
				return
			}
			p.allocated[event.Task.UID]++
		},
		DeallocateFunc: func(event *framework.Event) {
			if p.action == "preempt" || p.action == "reclaim" {
				p.evictions.deallocated(event.Task)
				return
			}
			if asksVGPU(event.Task.Pod) {
				p.leaked[event.Task.Namespace+"/"+event.Task.Name] = true
			}
		},
	})
	// preempt walks nodes by their scores (preempt.go normalPreempt: util.SortNodes), equal
	// here (no node-order plugin, deviceshare's weight 0), so in the order the parallel
	// predicates found them: during preempt only, the name orders them, the advisor's
	// documented choice. reclaim walks them unscored (reclaim.go reclaimForTask).
	names := make([]string, 0, len(ssn.Nodes))
	for name := range ssn.Nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	rank := make(map[string]float64, len(names))
	for i, name := range names {
		rank[name] = float64(len(names) - i)
	}
	ssn.AddNodeOrderFn(p.Name(), func(_ *api.TaskInfo, node *api.NodeInfo) (float64, error) {
		if p.action != "preempt" {
			return 0, nil
		}
		return rank[node.Name], nil
	})
	ssn.AddBestNodeFn(p.Name(), func(task *api.TaskInfo, scores map[float64][]*api.NodeInfo) *api.NodeInfo {
		best := math.Inf(-1)
		for score := range scores {
			if score > best {
				best = score
			}
		}
		nodes := append([]*api.NodeInfo(nil), scores[best]...)
		if len(nodes) == 0 {
			return nil
		}
		sort.Slice(nodes, func(a, b int) bool { return nodes[a].Name < nodes[b].Name })
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
		}
		p.tied[task.UID] = names
		return nodes[0]
	})
}

func (p *tiePlugin) OnSessionClose(*framework.Session) {}

const askedPluginName = "xgpu-conformance-asked"

// asked records each task allocate asks ssn.Allocatable about, and decides nothing
// (Session.Allocatable stops at the first plugin that refuses, so it goes first).
type asked struct{}

func (asked) Name() string { return askedPluginName }

func (a asked) OnSessionOpen(ssn *framework.Session) {
	ssn.AddAllocatableFn(a.Name(), func(_ *api.QueueInfo, task *api.TaskInfo) bool {
		if ties.action == "allocate" {
			ties.asked[task.UID] = true
		}
		return true
	})
}

func (asked) OnSessionClose(*framework.Session) {}

func (p *tiePlugin) of(uid api.TaskID, node string) []string {
	if names, ok := p.tied[uid]; ok {
		return names
	}
	return []string{node} // a single candidate: allocate takes it without scoring
}

func asksVGPU(pod *v1.Pod) bool {
	for _, container := range pod.Spec.Containers {
		if _, ok := container.Resources.Limits[cluster.VGPUNumber]; ok {
			return true
		}
	}
	return false
}

// preemptQueues: the queues v1.14.1's preempt.go Execute collects (`queues[queue.UID]`)
// from every job not Pending and valid, starving or not, before it asks JobStarving. It
// visits them in map order, and after each runs its pass within jobs over every starving
// job of every queue (`underRequest`), which drains the preemptor queues the next queue's
// pass between jobs reads: with two or more, the outcome is a draw (v1.15.1 visits only
// the starving jobs' queues, in QueueOrderFn order, each with its own jobs).
func preemptQueues(ssn *framework.Session) []string {
	seen := map[string]bool{}
	for _, job := range ssn.Jobs {
		if job.IsPending() {
			continue
		}
		if vr := ssn.JobValid(job); vr != nil && !vr.Pass {
			continue
		}
		if queue, ok := ssn.Queues[job.Queue]; ok {
			seen[queue.Name] = true
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
