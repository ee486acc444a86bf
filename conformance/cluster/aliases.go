package cluster

import (
	"strconv"

	"xgpu-insight/conformance/cluster/scenario"
)

// The scenario's types, read by package scenario.
type (
	Quantity    = scenario.Quantity
	Card        = scenario.Card
	Taint       = scenario.Taint
	Toleration  = scenario.Toleration
	Requirement = scenario.Requirement
	Term        = scenario.Term
	Affinity    = scenario.Affinity
	OtherPod    = scenario.OtherPod
	Node        = scenario.Node
	Request     = scenario.Request
	Pod         = scenario.Pod
	Scheduler   = scenario.Scheduler
	Gang        = scenario.Gang
	Queue       = scenario.Queue
	Group       = scenario.Group
	Policy      = scenario.Policy
	Scenario    = scenario.Scenario
)

// ReadScenario reads a scenario file (scenario.Read): without MIG.
func ReadScenario(path string) (*Scenario, error) { return scenario.Read(path) }

// ReadScenarioWithMIG reads a scenario file with its MIG cards and pods
// (scenario.ReadWithMIG), which BuildCluster gives the device plugin's resources.
func ReadScenarioWithMIG(path string) (*Scenario, error) { return scenario.ReadWithMIG(path) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
