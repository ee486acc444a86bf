package cluster

// Scenario → Kubernetes and Volcano objects, as a live cluster running Volcano's vGPU
// device plugin would hold them: the node registration annotation and allocatable of
// pkg/scheduler/api/devices/nvidia/vgpu (device_info.go NewGPUDevices, utils.go
// decodeNodeDevices), the allocation annotation of running pods (utils.go
// encodePodDevices); the scenario's PodGroups and Queues, and for a pod of no group one
// PodGroup of its own (min_member 1) in the queue `default`, as Volcano's controller makes.
// A node's other and resident pods are default-scheduler's (DaemonSet, mirror pods): no
// group annotation, so Volcano's cache puts them on their node only, in no job or queue
// (cache/event_handlers.go getOrCreateJob, api/job_info.go getJobID).

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"xgpu-insight/conformance/cluster/scenario"
)

const (
	registerAnnotation = "volcano.sh/node-vgpu-register" // config.VolcanoVGPURegister
	// config.VolcanoVGPUHandshake: v1.14.1's NewGPUDevices reads no node without it, and
	// patches one whose value is not "Requesting_<time>" within the last minute; a time to
	// come keeps it as the device plugin left it. v1.15.1 reads it no more.
	handshakeAnnotation = "volcano.sh/node-vgpu-handshake"
	handshakeValue      = "Requesting_2099.01.01 00:00:00"
	preemptableKey      = "volcano.sh/preemptable"
	IDsAnnotation       = "volcano.sh/vgpu-ids-new" // vgpu.AssignedIDsAnnotations
	// TaskSpecAnnotation is a pod's task role (batch.TaskSpecKey, read by getTaskRole).
	TaskSpecAnnotation = "volcano.sh/task-spec"
	vgpuNumber         = "volcano.sh/vgpu-number"
	vgpuMemory         = "volcano.sh/vgpu-memory"
	vgpuCores          = "volcano.sh/vgpu-cores"
	vgpuPercent        = "volcano.sh/vgpu-memory-percentage"
	defaultVgpus       = 10 // docs/design.md §9.2: volcano-vgpu's max_vgpus_per_card
	queueName          = "default"
)

// Allocatable of a node whose scenario says nothing: unconstrained, as the advisor reads it.
var unbounded = map[v1.ResourceName]string{
	// Far above any scenario's sums (int64 millicores and bytes hold them exactly).
	v1.ResourceCPU: "1e12", v1.ResourceMemory: "1e18", v1.ResourcePods: "1e9",
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// cardUUID is fixed-width: vgpu's AddResource matches with strings.Contains, so GPU-x-1
// must not be a prefix of GPU-x-10.
func cardUUID(node string, index int) string { return fmt.Sprintf("GPU-%s-%04d", node, index) }

type Cluster struct {
	Nodes    []*v1.Node
	Pods     []*v1.Pod // every pod: running, resident, pending
	Groups   []*vcv1beta1.PodGroup
	Classes  []*schedulingv1.PriorityClass
	Queues   []*vcv1beta1.Queue
	Pending  []*v1.Pod         // in scenario order
	CardOf   map[string]int    // card UUID → the scenario's card index
	CardsOn  map[string][]Card // node → its cards, by index
	slotsDef int
	// a PodGroup is as old as its first pod: Volcano orders equal jobs by creation
	groupCreated map[string]metav1.Time
}

func sortedCards(cards []Card) []Card {
	out := append([]Card(nil), cards...)
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out
}

func quantity(q Quantity) (resource.Quantity, error) {
	return resource.ParseQuantity(string(q))
}

func BuildCluster(s *Scenario) (*Cluster, error) {
	c := &Cluster{CardOf: map[string]int{}, CardsOn: map[string][]Card{}, slotsDef: defaultVgpus, groupCreated: map[string]metav1.Time{}}
	if s.MaxVgpusPerCard != nil {
		c.slotsDef = *s.MaxVgpusPerCard
	}
	for _, n := range s.Nodes {
		node, err := c.node(n)
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	priorities := map[int32]bool{}
	seq := 0
	for _, n := range s.Nodes {
		for _, o := range append(append([]OtherPod(nil), n.OtherPods...), n.ResidentPods...) {
			pod, err := c.pod(Pod{Name: o.Name, Resources: o.Resources, System: true}, n.Name, seq)
			if err != nil {
				return nil, err
			}
			seq++
			c.Pods = append(c.Pods, pod)
			priorities[0] = true
		}
	}
	for _, p := range s.Pods {
		node := ""
		if p.Node != nil {
			node = *p.Node
		}
		pod, err := c.pod(p, node, seq)
		if err != nil {
			return nil, err
		}
		seq++
		c.Pods = append(c.Pods, pod)
		priorities[p.Priority] = true
		if node == "" {
			c.Pending = append(c.Pending, pod)
		}
	}
	if err := c.jobs(s, priorities); err != nil {
		return nil, err
	}
	for value := range priorities {
		c.Classes = append(c.Classes, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: className(value)}, Value: value,
		})
	}
	return c, nil
}

// jobs: the scenario's Queues (`default` always, as Volcano creates it) and PodGroups.
func (c *Cluster) jobs(s *Scenario, priorities map[int32]bool) error {
	queues := append([]Queue(nil), s.Queues...)
	named := map[string]bool{}
	for _, q := range queues {
		named[q.Name] = true
	}
	if !named[queueName] {
		queues = append(queues, Queue{Name: queueName})
	}
	for i, q := range queues {
		// As old as its place in the listing (`default` last unless listed): Volcano orders
		// queues of equal priority and share by creation, the advisor by that listing.
		created := metav1.NewTime(epoch.Add(-time.Duration(len(queues)-i) * time.Hour))
		queue := &vcv1beta1.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: q.Name, CreationTimestamp: created},
			Spec:       vcv1beta1.QueueSpec{Weight: 1, Reclaimable: q.Reclaimable, Priority: q.Priority},
			Status:     vcv1beta1.QueueStatus{State: vcv1beta1.QueueStateOpen},
		}
		if q.Weight != nil {
			queue.Spec.Weight = *q.Weight
		}
		if q.State != "" {
			queue.Status.State = vcv1beta1.QueueState(q.State)
		}
		var err error
		if queue.Spec.Capability, err = resourceList(q.Capability); err != nil {
			return fmt.Errorf("queues[%s].capability: %w", q.Name, err)
		}
		if queue.Spec.Guarantee.Resource, err = resourceList(q.Guarantee); err != nil {
			return fmt.Errorf("queues[%s].guarantee: %w", q.Name, err)
		}
		if queue.Spec.Deserved, err = resourceList(q.Deserved); err != nil {
			return fmt.Errorf("queues[%s].deserved: %w", q.Name, err)
		}
		c.Queues = append(c.Queues, queue)
	}
	running := map[string]int32{}
	for _, p := range s.Pods {
		if p.Group != "" && p.Node != nil {
			running[p.Group]++
		}
	}
	for _, g := range s.Groups {
		ns, name, ok := strings.Cut(g.Name, "/")
		if !ok {
			return fmt.Errorf("group %q: a name is namespace/name", g.Name)
		}
		min := int32(1)
		if g.MinMember != nil {
			min = *g.MinMember
		}
		queue := g.Queue
		if queue == "" {
			queue = queueName
		}
		// The scenario's phase, else as the advisor infers it (docs/design.md §10.2):
		// min_member running, Running; some, Inqueue (admitted once, not all scheduled);
		// none, Pending.
		phase := vcv1beta1.PodGroupPending
		if g.Phase != "" {
			phase = vcv1beta1.PodGroupPhase(g.Phase)
		} else if running[g.Name] >= min {
			phase = vcv1beta1.PodGroupRunning
		} else if running[g.Name] > 0 {
			phase = vcv1beta1.PodGroupInqueue
		}
		priorities[g.Priority] = true
		pg := &vcv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: c.groupCreated[g.Name]},
			Spec: vcv1beta1.PodGroupSpec{
				Queue: queue, MinMember: min, PriorityClassName: className(g.Priority),
				MinTaskMember: g.MinTaskMember,
			},
			Status: vcv1beta1.PodGroupStatus{Phase: phase},
		}
		if len(g.MinResources) > 0 {
			list, err := resourceList(g.MinResources)
			if err != nil {
				return fmt.Errorf("groups[%s].min_resources: %w", g.Name, err)
			}
			pg.Spec.MinResources = &list
		}
		c.Groups = append(c.Groups, pg)
	}
	return nil
}

func resourceList(m map[string]Quantity) (v1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := v1.ResourceList{}
	for key, text := range m {
		q, err := quantity(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out[v1.ResourceName(key)] = q
	}
	return out, nil
}

func className(value int32) string {
	if value < 0 {
		return fmt.Sprintf("prio-m%d", -value)
	}
	return fmt.Sprintf("prio-%d", value)
}

func (c *Cluster) node(n Node) (*v1.Node, error) {
	alloc := v1.ResourceList{}
	for name, text := range unbounded {
		alloc[name] = resource.MustParse(text)
	}
	for key, text := range n.Allocatable {
		q, err := quantity(text)
		if err != nil {
			return nil, fmt.Errorf("nodes[%s].allocatable.%s: %w", n.Name, key, err)
		}
		alloc[v1.ResourceName(key)] = q
	}
	// A card in MIG mode is no vGPU device: the NVIDIA device plugin advertises its
	// instances (scenario.AddMIG), Volcano's vGPU plugin never registers it.
	if err := scenario.AddMIG(alloc, n); err != nil {
		return nil, err
	}
	cards := []Card{}
	for _, card := range sortedCards(n.Cards) {
		if card.Mig == nil {
			cards = append(cards, card)
		}
	}
	c.CardsOn[n.Name] = cards
	annotations := map[string]string{}
	if len(cards) > 0 {
		annotations[handshakeAnnotation] = handshakeValue
		var register strings.Builder
		var slots, memory, healthyCards int64
		for _, card := range cards {
			number := c.slotsDef
			if card.MaxVgpus != nil {
				number = *card.MaxVgpus
			}
			healthy := card.Healthy == nil || *card.Healthy
			model := strings.NewReplacer(",", " ", ":", " ").Replace(card.Model)
			uuid := cardUUID(n.Name, card.Index)
			c.CardOf[uuid] = card.Index
			// UUID,Number,Memory,Type,Health,Mode: (utils.go decodeNodeDevices)
			fmt.Fprintf(&register, "%s,%d,%d,NVIDIA-%s,%t,hami-core:", uuid, number, card.MemoryMiB, model, healthy)
			memory += card.MemoryMiB
			if healthy {
				slots += int64(number)
				healthyCards++
			}
		}
		annotations[registerAnnotation] = register.String()
		// What kubelet's allocatable holds from Project-HAMi/volcano-vgpu-device-plugin
		// (pkg/plugin/vgpu/plugin.go ListAndWatch, apiDevices; cache.go notify): the slots and
		// cores of its healthy cards (a card's devices carry its health), the memory of every
		// card (ListAndWatch re-sends the memory devices unchanged when a card fails).
		alloc[vgpuNumber] = *resource.NewQuantity(slots, resource.DecimalSI)
		alloc[vgpuMemory] = *resource.NewQuantity(memory, resource.DecimalSI)
		alloc[vgpuCores] = *resource.NewQuantity(100*healthyCards, resource.DecimalSI)
	}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, Annotations: annotations},
		Spec:       v1.NodeSpec{Unschedulable: n.Unschedulable},
		Status:     v1.NodeStatus{Capacity: alloc, Allocatable: alloc},
	}
	for _, t := range n.Taints {
		node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: t.Key, Value: t.Value, Effect: v1.TaintEffect(t.Effect)})
	}
	return node, nil
}

// perCard is what one card gives the pod: the scenario's totals are over its N cards.
func perCard(r Request, capacity int64) (memory, cores int64) {
	n := int64(r.GPUs())
	switch {
	case r.MemoryPercent > 0:
		memory = int64(float64(capacity) * float64(r.MemoryPercent) / 100.0)
	case r.MemoryMiB > 0:
		memory = r.MemoryMiB / n
	default:
		memory = capacity
	}
	return memory, r.CorePercent / n
}

func (c *Cluster) pod(p Pod, node string, seq int) (*v1.Pod, error) {
	ns, name, ok := strings.Cut(p.Name, "/")
	if !ok {
		return nil, fmt.Errorf("pod %q: a name is namespace/pod", p.Name)
	}
	created := metav1.NewTime(epoch.Add(time.Duration(seq) * time.Second))
	requests := v1.ResourceList{}
	for key, text := range p.Resources {
		q, err := quantity(text)
		if err != nil {
			return nil, fmt.Errorf("pod %s resources.%s: %w", p.Name, key, err)
		}
		requests[v1.ResourceName(key)] = q
	}
	limits := v1.ResourceList{}
	if mig := scenario.MigRequest(p, requests); mig != nil {
		limits = mig // a MIG pod: its instances, no vGPU
	}
	annotations := map[string]string{}
	for k, v := range p.Annotations {
		annotations[k] = v
	}
	group := "pg-" + name
	if p.Group != "" {
		groupNS, groupName, _ := strings.Cut(p.Group, "/")
		if groupNS != ns {
			return nil, fmt.Errorf("pod %s: group %s is in another namespace", p.Name, p.Group)
		}
		group = groupName
		if _, seen := c.groupCreated[p.Group]; !seen {
			c.groupCreated[p.Group] = created
		}
	}
	if !p.System {
		annotations[vcv1beta1.KubeGroupNameAnnotationKey] = group
	}
	if p.Role != "" {
		annotations[TaskSpecAnnotation] = p.Role
	}
	if p.Preemptable != nil {
		annotations[preemptableKey] = fmt.Sprint(*p.Preemptable)
	}
	isGPU := p.Request.MigProfile == "" && (p.Request.Gpus != nil || p.Request.MemoryMiB > 0 || p.Request.CorePercent > 0 || p.Request.MemoryPercent > 0)
	if isGPU {
		n := int64(p.Request.GPUs())
		if p.Request.MemoryMiB%n != 0 || p.Request.CorePercent%n != 0 {
			return nil, fmt.Errorf("pod %s: memory_mib and core_percent must split evenly over %d cards", p.Name, n)
		}
		set := func(key string, value int64) {
			q := *resource.NewQuantity(value, resource.DecimalSI)
			limits[v1.ResourceName(key)] = q
			requests[v1.ResourceName(key)] = q
		}
		set(vgpuNumber, n)
		if p.Request.MemoryPercent > 0 {
			set(vgpuPercent, p.Request.MemoryPercent)
		} else if p.Request.MemoryMiB > 0 {
			set(vgpuMemory, p.Request.MemoryMiB/n)
		}
		if p.Request.CorePercent > 0 {
			set(vgpuCores, p.Request.CorePercent/n)
		}
	}
	phase := v1.PodPending
	if node != "" {
		phase = v1.PodRunning
		if isGPU {
			ids, err := c.allocation(p, node)
			if err != nil {
				return nil, err
			}
			annotations[IDsAnnotation] = ids
		}
	}
	priority := p.Priority
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			UID: types.UID(ns + "-" + name), Name: name, Namespace: ns,
			Labels: p.Labels, Annotations: annotations, CreationTimestamp: created,
		},
		Spec: v1.PodSpec{
			NodeName:          node,
			NodeSelector:      p.NodeSelector,
			Priority:          &priority,
			PriorityClassName: className(priority),
			Containers:        []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: requests, Limits: limits}}},
			Affinity:          affinity(p.Affinity),
		},
		Status: v1.PodStatus{Phase: phase},
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
	if p.PreemptionPolicy != "" {
		policy := v1.PreemptionPolicy(p.PreemptionPolicy)
		pod.Spec.PreemptionPolicy = &policy
	}
	if p.System {
		pod.Spec.SchedulerName = v1.DefaultSchedulerName
	}
	if p.Group != "" || p.System {
		return pod, nil
	}
	pgPhase := vcv1beta1.PodGroupPending
	if node != "" {
		pgPhase = vcv1beta1.PodGroupRunning
	}
	c.Groups = append(c.Groups, &vcv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: group, Namespace: ns, CreationTimestamp: created},
		Spec: vcv1beta1.PodGroupSpec{
			Queue: queueName, MinMember: 1, PriorityClassName: className(priority),
		},
		Status: vcv1beta1.PodGroupStatus{Phase: pgPhase},
	})
	return pod, nil
}

// allocation is a running pod's volcano.sh/vgpu-ids-new: UUID,Type,MiB,cores: per card.
func (c *Cluster) allocation(p Pod, node string) (string, error) {
	if len(p.Cards) != p.Request.GPUs() {
		return "", fmt.Errorf("pod %s: %d cards for a %d-card request", p.Name, len(p.Cards), p.Request.GPUs())
	}
	var b strings.Builder
	for _, index := range p.Cards {
		var card *Card
		for i := range c.CardsOn[node] {
			if c.CardsOn[node][i].Index == index {
				card = &c.CardsOn[node][i]
			}
		}
		if card == nil {
			return "", fmt.Errorf("pod %s: node %s has no card %d", p.Name, node, index)
		}
		memory, cores := perCard(p.Request, card.MemoryMiB)
		fmt.Fprintf(&b, "%s,NVIDIA,%d,%d:", cardUUID(node, index), memory, cores)
	}
	return b.String(), nil
}

func affinity(a *Affinity) *v1.Affinity {
	if a == nil || a.Node == nil || len(a.Node.Required) == 0 {
		return nil
	}
	sel := &v1.NodeSelector{}
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

// GroupAnnotation names a pod's PodGroup (vcv1beta1.KubeGroupNameAnnotationKey); a pod of
// no group names its own automatic one, "pg-" + its name.
const GroupAnnotation = vcv1beta1.KubeGroupNameAnnotationKey

// VGPUNumber is the resource a pod asks vGPUs by (deviceshare's vgpu.VolcanoVGPUNumber).
const VGPUNumber v1.ResourceName = vgpuNumber
