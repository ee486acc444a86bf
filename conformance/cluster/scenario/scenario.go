// Package scenario reads the scenario file (docs/design.md §4, §9, §10) as the advisor reads
// it, YAML or JSON, for every harness: the keys they turn into Kubernetes and Volcano
// objects. Keys no harness has an upstream meaning for are refused, so a comparison never
// silently drops one. It imports no Volcano package: the kube harness reads scenarios
// through it alone, its module graph kube-scheduler's own.
package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"
)

// Quantity is a Kubernetes quantity written as a string ("62", "480Gi") or a number (110).
type Quantity string

func (q *Quantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*q = Quantity(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("expected a quantity, got %s", b)
	}
	*q = Quantity(n.String())
	return nil
}

type Card struct {
	Index     int    `json:"index"`
	MemoryMiB int64  `json:"memory_mib"`
	Model     string `json:"model"`
	Healthy   *bool  `json:"healthy"`
	UUID      string `json:"uuid"`
	Numa      *int   `json:"numa"`
	MaxVgpus  *int   `json:"max_vgpus"`
	// A card in MIG mode (docs/design.md §13): the kube and session harnesses count its
	// instances (AddMIG), the device-code one leaves it out with its pods (dropMIG).
	Mig *Mig `json:"mig"`
}

// Mig is a card's GPU instances (docs/design.md §13).
type Mig struct {
	Instances []MigInstance `json:"instances"`
}

type MigInstance struct {
	Profile string `json:"profile"`
	Start   int    `json:"start"`
}

// Held is one MIG instance a bound MIG pod holds: the card's index and the instance's start.
type Held struct {
	Card  int `json:"card"`
	Start int `json:"start"`
}

type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Effect string `json:"effect"`
}

type Toleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
	Effect   string `json:"effect"`
}

type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

type Term struct {
	MatchExpressions []Requirement `json:"match_expressions"`
	MatchFields      []Requirement `json:"match_fields"`
}

type Affinity struct {
	Node *struct {
		Required []Term `json:"required"`
	} `json:"node"`
}

type OtherPod struct {
	Name      string              `json:"name"`
	Resources map[string]Quantity `json:"resources"`
	// A resident pod being deleted: it still holds its node's cpu and memory to
	// kube-scheduler's filters and to the advisor (what it changes is scale-up's template).
	Terminating bool `json:"terminating"`
}

type Node struct {
	Name          string              `json:"name"`
	Cards         []Card              `json:"cards"`
	Allocatable   map[string]Quantity `json:"allocatable"`
	Labels        map[string]string   `json:"labels"`
	Taints        []Taint             `json:"taints"`
	Unschedulable bool                `json:"unschedulable"`
	OtherPods     []OtherPod          `json:"other_pods"`
	ResidentPods  []OtherPod          `json:"resident_pods"`
	MigStrategy   string              `json:"mig_strategy"` // none (absent), single, mixed
}

type Request struct {
	Gpus          *int   `json:"gpus"`
	MemoryMiB     int64  `json:"memory_mib"`
	CorePercent   int64  `json:"core_percent"`
	MemoryPercent int64  `json:"memory_percent"`
	MigProfile    string `json:"mig_profile"` // a MIG pod: kept by ReadWithMIG alone
}

type Pod struct {
	Name         string              `json:"name"`
	Node         *string             `json:"node"`
	Cards        []int               `json:"cards"`
	Request      Request             `json:"request"`
	Resources    map[string]Quantity `json:"resources"`
	NodeSelector map[string]string   `json:"node_selector"`
	Affinity     *Affinity           `json:"affinity"`
	Tolerations  []Toleration        `json:"tolerations"`
	Priority     int32               `json:"priority"`
	Owner        string              `json:"owner"`
	Annotations  map[string]string   `json:"annotations"`
	Labels       map[string]string   `json:"labels"`
	Started      string              `json:"started"`
	// Read, never used (docs/design.md §12.3): both sides order the queue by the list, the
	// advisor's creation order, so a scenario that gives the times is still compared.
	Created   string `json:"created"`
	Scheduled string `json:"scheduled"`
	Group     string `json:"group"` // a PodGroup of the scenario's groups
	// The MIG instances a bound MIG pod holds (kept by ReadWithMIG alone).
	MigInstances []Held `json:"mig_instances"`
	Role         string `json:"role"` // its task role: the volcano.sh/task-spec annotation
	// The session's preemption rules (its preempt and reclaim actions, and kube's
	// DefaultPreemption).
	Preemptable      *bool  `json:"preemptable"`
	PreemptionPolicy string `json:"preemption_policy"`
	// A node's other or resident pod (DaemonSet, mirror): kube's default-scheduler places
	// it, so it has no PodGroup and is in no queue; it only takes its node's resources.
	// Set by the harness, never read from the file.
	System bool `json:"-"`
}

type Scheduler struct {
	Profile          string   `json:"profile"`
	ScheduleWeight   *int     `json:"schedule_weight"`
	Actions          []string `json:"actions"`
	Gang             *Gang    `json:"gang"`
	OvercommitFactor *float64 `json:"overcommit_factor"`
	QueuePlugin      *string  `json:"queue_plugin"` // proportion (absent) or capacity
}

// Gang is the gang plugin's options (enablePreemptable, enableJobStarving).
type Gang struct {
	Preemptable *bool `json:"preemptable"`
	JobStarving *bool `json:"job_starving"`
}

// Queue is a Volcano Queue (docs/design.md §10.1).
type Queue struct {
	Name        string              `json:"name"`
	Weight      *int32              `json:"weight"`
	Capability  map[string]Quantity `json:"capability"`
	Guarantee   map[string]Quantity `json:"guarantee"`
	Deserved    map[string]Quantity `json:"deserved"`
	Reclaimable *bool               `json:"reclaimable"`
	Priority    int32               `json:"priority"`
	State       string              `json:"state"`
}

// Group is a PodGroup: name is namespace/name, its pods name it in their `group`.
type Group struct {
	Name         string              `json:"name"`
	MinMember    *int32              `json:"min_member"`
	Queue        string              `json:"queue"`
	Priority     int32               `json:"priority"`
	MinResources map[string]Quantity `json:"min_resources"`
	Phase        string              `json:"phase"` // status.phase; empty: inferred (objects.go)
	// spec.minTaskMember: each task role's own minimum
	MinTaskMember map[string]int32 `json:"min_task_member"`
}

type Policy struct {
	Node string `json:"node"`
	Card string `json:"card"`
}

type Scenario struct {
	Scheduler       *Scheduler `json:"scheduler"`
	Policy          *Policy    `json:"policy"`
	MaxVgpusPerCard *int       `json:"max_vgpus_per_card"`
	Nodes           []Node     `json:"nodes"`
	Pods            []Pod      `json:"pods"`
	Queues          []Queue    `json:"queues"`
	Groups          []Group    `json:"groups"`
	// Read, never used: ages (§12.3) are counted to `now`, and an autoscaler's replicas
	// (§12.2) are judged apart, so neither changes a pod's verdict the harnesses compare.
	Now         string            `json:"now"`
	Autoscalers []json.RawMessage `json:"autoscalers"`
	// Placed is no scenario key: the preemption comparison writes it into the kube
	// harness's copy, the Pending pods the advisor's cycle placed and where.
	Placed map[string]string `json:"placed"`
}

// Read reads the scenario without its MIG (dropMIG), for the harness that does not model
// it: Volcano v1.15.1's device code (its MIG mode is compared apart, ./migcards).
func Read(path string) (*Scenario, error) {
	s, err := ReadWithMIG(path)
	if err != nil {
		return nil, err
	}
	s.dropMIG()
	return s, nil
}

// ReadWithMIG reads the scenario as the file has it, MIG cards and MIG pods kept: the kube
// harness and Volcano v1.14.1's session, where an instance is the device plugin's extended
// resource (AddMIG).
func ReadWithMIG(path string) (*Scenario, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	data, err := yaml.YAMLToJSON(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// dropMIG leaves out MIG cards and MIG pods (docs/conformance.md): a MIG instance is the
// device plugin's extended resource, which Volcano's device-code harness does not model. A
// node left with no card leaves too, with the pods bound to it, as conformance/files.py
// does.
func (s *Scenario) dropMIG() {
	gone := map[string]bool{}
	nodes := s.Nodes[:0]
	for _, n := range s.Nodes {
		cards := []Card{}
		for _, c := range n.Cards {
			if c.Mig == nil {
				cards = append(cards, c)
			}
		}
		if len(cards) == 0 && len(n.Cards) > 0 {
			gone[n.Name] = true
			continue
		}
		n.Cards = cards
		nodes = append(nodes, n)
	}
	s.Nodes = nodes
	pods := s.Pods[:0]
	for _, p := range s.Pods {
		bound := p.Node != nil && gone[*p.Node]
		if p.Request.MigProfile == "" && p.MigInstances == nil && !bound {
			pods = append(pods, p)
		}
	}
	s.Pods = pods
}

// GPUs is the request's card count; `gpus` defaults to 1 (docs/design.md §1).
func (r Request) GPUs() int {
	if r.Gpus == nil {
		return 1
	}
	return *r.Gpus
}

// EncodeEach runs every scenario file through run and writes each result to out as one JSON
// line, in order. It returns the exit status: 1 when a result failed (an error is per file,
// so one bad scenario never hides the others' answers) or a line could not be written.
func EncodeEach[T any](out io.Writer, paths []string, run func(string) T, failed func(T) bool) int {
	enc := json.NewEncoder(out)
	status := 0
	for _, path := range paths {
		res := run(path)
		if failed(res) {
			status = 1
		}
		if err := enc.Encode(res); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return status
}
