// Command migcards runs Volcano v1.15.1's vGPU MIG mode on cases read from stdin (JSON) and
// writes what it did (JSON): the node registration decode (vgpu.NewGPUDevices, which gives
// the node its mode and each card its geometry groups from knownMigGeometries), then on one
// card a sequence of pods added (MIGFactory.TryAddPod on a copy, as the filter does, then
// AddPod with the instance id it chose, as AddResource does) and removed (SubPod).
// conformance/volcano_mig_compare.py draws the cases and holds the advisor's
// advisor/core/profiles/volcano_mig.py to the answers.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/pkg/scheduler/api/devices/config"
	"volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu"
)

type Card struct {
	Mode string `json:"mode"`
	Type string `json:"type"`
}

type Op struct {
	Add *uint `json:"add,omitempty"` // a pod asking this memory (MiB)
	Sub *int  `json:"sub,omitempty"` // the pod added at this op index leaves
}

type Case struct {
	Factor uint                          `json:"factor"`
	Known  []config.AllowedMigGeometries `json:"known"`
	Cards  []Card                        `json:"cards"`
	Card   int                           `json:"card"` // the card the ops run on
	Ops    []Op                          `json:"ops"`
}

type Usage struct {
	Name string `json:"name"`
	Used []int  `json:"used"`
}

type Step struct {
	Fit     bool    `json:"fit"`
	ID      string  `json:"id"`
	Error   string  `json:"error,omitempty"`
	UsedMem uint    `json:"used_mem"`
	Group   int     `json:"group"`
	Usage   []Usage `json:"usage"`
}

type Answer struct {
	Mode   string     `json:"mode"`
	Groups [][]string `json:"groups"` // per card, its groups' names
	Steps  []Step     `json:"steps"`
}

func node(c Case) *v1.Node {
	var reg strings.Builder
	for i, card := range c.Cards {
		fmt.Fprintf(&reg, "GPU-%d,10,81920,%s,true,%s:", i, card.Type, card.Mode)
	}
	q := resource.MustParse("1000")
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "n",
			Annotations: map[string]string{config.VolcanoVGPURegister: reg.String()},
		},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			config.VolcanoVGPUNumber: q, config.VolcanoVGPUCores: q, config.VolcanoVGPUMemory: q,
		}},
	}
}

func run(c Case) Answer {
	cfg := config.GetConfig()
	cfg.NvidiaConfig.GPUMemoryFactor = c.Factor
	cfg.NvidiaConfig.MigGeometriesList = c.Known
	gs := vgpu.NewGPUDevices("n", node(c))
	ans := Answer{Mode: gs.Mode}
	for i := range c.Cards {
		names := []string{}
		for _, g := range gs.Device[i].MigTemplate {
			names = append(names, g.Group)
		}
		ans.Groups = append(ans.Groups, names)
	}
	if gs.Mode != "mig" {
		return ans
	}
	gd := gs.Device[c.Card]
	ids := map[int]string{}
	for k, op := range c.Ops {
		step := Step{}
		uid := fmt.Sprintf("pod-%d", k)
		if op.Add != nil {
			trial := gs.DeepCopy().(*vgpu.GPUDevices).Device[c.Card]
			fit, id := gs.Sharing.TryAddPod(trial, *op.Add, 0)
			step.Fit, step.ID = fit, id
			if fit {
				if err := gs.Sharing.AddPod(gd, *op.Add, 0, uid, id); err != nil {
					step.Error = err.Error()
				} else {
					ids[k] = id
				}
			}
		} else if op.Sub != nil {
			id, ok := ids[*op.Sub]
			if ok {
				if err := gs.Sharing.SubPod(gd, 0, 0, fmt.Sprintf("pod-%d", *op.Sub), id); err != nil {
					step.Error = err.Error()
				}
				delete(ids, *op.Sub)
			}
		}
		step.UsedMem, step.Group = gd.UsedMem, gd.MigUsage.Index
		step.Usage = []Usage{}
		for _, u := range gd.MigUsage.UsageList {
			step.Usage = append(step.Usage, Usage{u.Name, append([]int{}, u.UsedIndex...)})
		}
		ans.Steps = append(ans.Steps, step)
	}
	return ans
}

func main() {
	klog.SetOutput(io.Discard)
	config.InitDevicesConfig("", "") // no client: the default config, geometries set per case
	var cases []Case
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "migcards:", err)
		os.Exit(2)
	}
	answers := make([]Answer, 0, len(cases))
	for _, c := range cases {
		answers = append(answers, run(c))
	}
	if err := json.NewEncoder(os.Stdout).Encode(answers); err != nil {
		fmt.Fprintln(os.Stderr, "migcards:", err)
		os.Exit(1)
	}
}
