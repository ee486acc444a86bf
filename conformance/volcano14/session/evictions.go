package main

import (
	"sort"

	"volcano.sh/volcano/pkg/scheduler/api"
)

// Preempted is what preempt or reclaim did for one Pending pod: the action and node that
// pipelined it, and the pods evicted for it (committed), with the node each ran on.
type Preempted struct {
	Action  string   `json:"action"`
	Node    string   `json:"node"`
	Victims []Victim `json:"victims"`
	// v1.14.1's reclaim evicts a victim before it compares (reclaim.go reclaimForTask:
	// Evict, then `if task.InitResreq.LessEqual(availableResources)`): true where the
	// node's FutureIdle covered the task before any eviction, so the victims were not
	// needed (v1.15.1 compares first and evicts none).
	Unneeded bool `json:"unneeded"`
}

type Victim struct {
	Pod    string        `json:"pod"`
	Node   string        `json:"node"`
	resreq *api.Resource // what its eviction frees (Resreq)
}

// evictions replays the session's events during preempt and reclaim to tell which
// preemptor each victim was evicted for. framework.Statement (statement.go) fires
// DeallocateFunc on Evict (the victim turns Releasing) and on UnPipeline (the preemptor
// back to Pending), AllocateFunc on Pipeline (the preemptor Pipelined) and on unevict (the
// victim back to Running); Discard undoes a statement's operations in reverse order. Both
// actions evict a node's victims for one preemptor, then pipeline it (preempt.go
// normalPreempt, reclaim.go reclaimForTask): the evictions not yet claimed when a task is
// pipelined are its own. In v1.14.1 a node's evictions stay in the job's statement when
// the preemptor does not fit there after all and moves on to another node: they are
// claimed by its pipeline on the next node, each victim keeping the node it ran on.
type evictions struct {
	unclaimed []Victim
	claims    map[string]*Preempted
	unneeded  bool // any claim Unneeded, kept or discarded since
}

func taskKey(task *api.TaskInfo) string { return task.Namespace + "/" + task.Name }

func (e *evictions) deallocated(task *api.TaskInfo) {
	key := taskKey(task)
	if task.Status == api.Releasing { // Evict
		e.unclaimed = append(e.unclaimed, Victim{Pod: key, Node: task.NodeName, resreq: task.Resreq})
		return
	}
	// UnPipeline: its victims are unevicted next (Discard walks backwards).
	if claim, ok := e.claims[key]; ok {
		e.unclaimed = append(append([]Victim(nil), claim.Victims...), e.unclaimed...)
		delete(e.claims, key)
	}
}

// allocated: `node` is the node the task is pipelined on (Pipeline has added it there).
func (e *evictions) allocated(task *api.TaskInfo, action string, node *api.NodeInfo) {
	key := taskKey(task)
	if task.Status == api.Pipelined {
		if e.claims == nil {
			e.claims = map[string]*Preempted{}
		}
		claim := &Preempted{Action: action, Node: task.NodeName, Victims: e.unclaimed}
		if action == "reclaim" && len(e.unclaimed) > 0 && node != nil {
			// FutureIdle before the pipeline and the evictions: covered already?
			need := task.InitResreq.Clone()
			for _, v := range e.unclaimed {
				if v.Node == node.Name {
					need.Add(v.resreq)
				}
			}
			have := node.FutureIdle()
			have.Add(task.Resreq)
			claim.Unneeded = need.LessEqual(have, api.Zero)
			e.unneeded = e.unneeded || claim.Unneeded
		}
		e.claims[key] = claim
		e.unclaimed = nil
		return
	}
	// unevict
	e.unclaimed = without(e.unclaimed, key)
	for _, claim := range e.claims {
		claim.Victims = without(claim.Victims, key)
	}
}

// count is how many evictions the session's statements committed: each eviction not undone.
func (e *evictions) count() int {
	n := len(e.unclaimed)
	for _, claim := range e.claims {
		n += len(claim.Victims)
	}
	return n
}

func without(victims []Victim, key string) []Victim {
	out := []Victim{}
	for _, v := range victims {
		if v.Pod != key {
			out = append(out, v)
		}
	}
	return out
}

// preempted: each pipelined preemptor's claim, victims limited to the evictions the
// session committed (the fake evictor's), sorted by name.
func (e *evictions) preempted(committed map[string]bool) map[string]*Preempted {
	out := map[string]*Preempted{}
	for key, claim := range e.claims {
		victims := []Victim{}
		for _, v := range claim.Victims {
			if committed[v.Pod] {
				victims = append(victims, v)
			}
		}
		sort.Slice(victims, func(a, b int) bool { return victims[a].Pod < victims[b].Pod })
		out[key] = &Preempted{Action: claim.Action, Node: claim.Node, Victims: victims, Unneeded: claim.Unneeded}
	}
	return out
}
