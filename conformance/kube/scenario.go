package main

// The scenario file (docs/design.md §4, §9, §10), read as the advisor reads it: YAML or
// JSON: the keys kube-scheduler's node filters read; the GPU keys are ignored here.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

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
}

type Request struct {
	Gpus          *int  `json:"gpus"`
	MemoryMiB     int64 `json:"memory_mib"`
	CorePercent   int64 `json:"core_percent"`
	MemoryPercent int64 `json:"memory_percent"`
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
	// preemptionPolicy; "" is PreemptLowerPriority.
	PreemptionPolicy string `json:"preemption_policy"`
}

type Scheduler struct {
	Profile        string   `json:"profile"`
	ScheduleWeight *int     `json:"schedule_weight"`
	Actions        []string `json:"actions"`
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
	// Placed is no scenario key: the comparison writes it for the preemption run, the
	// Pending pods the advisor's cycle placed and where (docs/conformance.md).
	Placed map[string]string `json:"placed"`
}

func readScenario(path string) (*Scenario, error) {
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
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// gpus is the request's card count; `gpus` defaults to 1 (docs/design.md §1).
func (r Request) gpus() int {
	if r.Gpus == nil {
		return 1
	}
	return *r.Gpus
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
