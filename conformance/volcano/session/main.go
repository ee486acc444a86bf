// Command volcano runs Volcano v1.15.1's own scheduler session on a scenario file and
// prints what it decided per pod, as JSON (docs/conformance.md).
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
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/pkg/scheduler"
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/metrics"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
	"volcano.sh/volcano/pkg/scheduler/util"
	"xgpu-insight/conformance/volcano/cluster"
)

const upstream = "volcano.sh/volcano v1.15.1"

// PodResult is one pod's outcome, in the shape the comparison reads.
type PodResult struct {
	Pod    string   `json:"pod"`
	Node   *string  `json:"node"`
	Cards  []int    `json:"cards"`
	Reason *string  `json:"reason"`
	Tied   []string `json:"tied"` // the nodes upstream would have drawn from at random
}

type GroupResult struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
}

type Result struct {
	Scenario  string        `json:"scenario"`
	Scheduler string        `json:"scheduler"`
	Upstream  string        `json:"upstream"`
	Actions   []string      `json:"actions"`
	Pods      []PodResult   `json:"pods"`
	Groups    []GroupResult `json:"groups"`
	Error     string        `json:"error,omitempty"`
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
	// FakeEvictor prints to stdout; the JSON goes to the real stdout only.
	out := os.Stdout
	os.Stdout = os.Stderr
	enc := json.NewEncoder(out)
	status := 0
	for _, path := range flag.Args() {
		res := runFile(path, *profile)
		if res.Error != "" {
			status = 1
		}
		if err := enc.Encode(res); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(status)
}

func quietLogs() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	_ = fs.Set("v", "0")
	klog.SetOutput(io.Discard)
}

func runFile(path, profile string) (res Result) {
	res = Result{Scenario: path, Scheduler: profile, Upstream: upstream, Pods: []PodResult{}, Groups: []GroupResult{}}
	s, err := cluster.ReadScenario(path)
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
	pods, groups, err := run(c, s, actions)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Pods, res.Groups = pods, groups
	return res
}

// schedulerConf is the volcano-scheduler-configmap the scenario describes: upstream's
// default first tier, then the vGPU predicates, and the harness's tie recorder.
func schedulerConf(s *cluster.Scenario, actions []string) string {
	policy := "" // legacy: deviceshare.SchedulePolicy unset
	if s.Policy != nil && s.Policy.Card != "" && s.Policy.Card != "legacy" {
		policy = s.Policy.Card
	}
	weight := 0
	if s.Scheduler != nil && s.Scheduler.ScheduleWeight != nil {
		weight = *s.Scheduler.ScheduleWeight
	}
	return fmt.Sprintf(`actions: %q
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: deviceshare
    arguments:
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolicy: %q
      deviceshare.ScheduleWeight: %d
  - name: %s
`, strings.Join(actions, ", "), policy, weight, tiesPluginName)
}

func run(c *cluster.Cluster, s *cluster.Scenario, actionNames []string) ([]PodResult, []GroupResult, error) {
	actions, tiers, configurations, _, err := scheduler.UnmarshalSchedulerConf(schedulerConf(s, actionNames))
	if err != nil {
		return nil, nil, err
	}
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
	for _, pg := range c.Groups {
		sc.AddPodGroupV1beta1(pg)
	}
	sc.AddQueueV1beta1(c.Queue)
	ready := new(atomic.Bool)
	ready.Store(true)
	sc.HyperNodesInfo = api.NewHyperNodesInfoWithCache(nil, nil, nil, ready)

	ties.reset()
	ssn := framework.OpenSession(sc, tiers, configurations)
	defer framework.CloseSession(ssn)
	// deviceshare's Allocate patches the pod through the session's client: the pods must
	// exist there (the session works on its own snapshot, so the informer's echo is moot).
	client := ssn.KubeClient()
	for _, pod := range c.Pods {
		if _, err := client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return nil, nil, err
		}
	}
	for _, action := range actions {
		action.Initialize()
		action.Execute(ssn)
		action.UnInitialize()
	}

	tasks := map[string]*api.TaskInfo{}
	jobs := map[string]*api.JobInfo{}
	for _, job := range ssn.Jobs {
		for _, task := range job.Tasks {
			tasks[task.Namespace+"/"+task.Name] = task
			jobs[task.Namespace+"/"+task.Name] = job
		}
	}
	var pods []PodResult
	for _, pod := range c.Pending {
		key := pod.Namespace + "/" + pod.Name
		r := PodResult{Pod: key}
		task, job := tasks[key], jobs[key]
		if task == nil {
			reason := "not in the session (no job)"
			r.Reason = &reason
			pods = append(pods, r)
			continue
		}
		if placed(task) {
			node := task.NodeName
			r.Node = &node
			cards, err := cardsOf(c, client, pod)
			if err != nil {
				return nil, nil, err
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
		pods = append(pods, r)
	}
	var groups []GroupResult
	for _, job := range ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		groups = append(groups, GroupResult{Name: job.Namespace + "/" + job.Name, Phase: string(job.PodGroup.Status.Phase)})
	}
	sort.Slice(groups, func(a, b int) bool { return groups[a].Name < groups[b].Name })
	if pods == nil {
		pods = []PodResult{}
	}
	return pods, groups, nil
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
type tiePlugin struct {
	tied map[api.TaskID][]string
}

var ties = &tiePlugin{}

func (p *tiePlugin) reset() { p.tied = map[api.TaskID][]string{} }

func (p *tiePlugin) Name() string { return tiesPluginName }

func (p *tiePlugin) OnSessionOpen(ssn *framework.Session) {
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

func (p *tiePlugin) of(uid api.TaskID, node string) []string {
	if names, ok := p.tied[uid]; ok {
		return names
	}
	return []string{node} // a single candidate: allocate takes it without scoring
}
