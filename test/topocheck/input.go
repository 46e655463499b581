package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"gpuprep/lib/cpuset"
)

// gresFile is what topocheck reads of `gpuprep-gres --format json`. It is
// declared here, not imported, so that the check holds gpuprep to its
// JSON as a user sees it.
type gresFile struct {
	Node struct {
		Cores []struct {
			ID   int        `json:"id"`
			CPUs cpuset.Set `json:"cpus"`
		} `json:"cores"`
		NUMA []struct {
			ID   int        `json:"id"`
			CPUs cpuset.Set `json:"cpus"`
		} `json:"numa"`
		GPUs       []gresGPU `json:"gpus"`
		GPUBackend string    `json:"gpu_backend"`
	} `json:"node"`
	Gres struct {
		Devices []gresDevice `json:"devices"`
	} `json:"gres"`
}

type gresGPU struct {
	Index           int        `json:"index"`
	BusID           string     `json:"bus_id"`
	NUMA            int        `json:"numa"`
	CPUAffinity     cpuset.Set `json:"cpu_affinity"`
	MemoryNUMANodes []int      `json:"memory_numa_nodes"`
	NearNICs        []struct {
		Name string `json:"name"`
		Path string `json:"path"`
	} `json:"near_nics"`
}

type gresDevice struct {
	File     string     `json:"file"`
	Cores    cpuset.Set `json:"cores"` // Slurm core ids
	Links    []int      `json:"links"`
	GPUIndex *int       `json:"gpu_index"`
	BusID    string     `json:"bus_id"`
	MIG      string     `json:"mig"`
}

// explainFile is what topocheck reads of `srunwrap --explain --json`.
type explainFile struct {
	Tasks int          `json:"tasks"`
	Ranks []rankRecord `json:"ranks"`
}

type rankRecord struct {
	LocalID int `json:"local_id"`
	GPU     *struct {
		Index int    `json:"index"`
		BusID string `json:"bus_id"`
		NUMA  int    `json:"numa"`
		MIG   string `json:"mig"`
	} `json:"gpu"`
	CPUs      string   `json:"cpus"`
	MemPolicy string   `json:"mem_policy"`
	MemNodes  []int    `json:"mem_nodes"`
	HCAs      []string `json:"hcas"`
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func readGres(path string) (*gresFile, error) {
	var g gresFile
	if err := readJSON(path, &g); err != nil {
		return nil, err
	}
	for i, d := range g.Gres.Devices {
		if d.GPUIndex == nil {
			return nil, fmt.Errorf("%s: gres.devices[%d] (%s) has no gpu_index", path, i, d.File)
		}
	}
	if len(g.Node.Cores) == 0 {
		return nil, fmt.Errorf("%s: node.cores is empty (not gpuprep-gres --format json?)", path)
	}
	return &g, nil
}

func readExplain(path string) (*explainFile, error) {
	var x explainFile
	if err := readJSON(path, &x); err != nil {
		return nil, err
	}
	return &x, nil
}

// osCPUs maps Slurm core ids to the OS CPUs of those cores; unknown ids
// are returned apart.
func (g *gresFile) osCPUs(cores cpuset.Set) (cpuset.Set, []int) {
	out := cpuset.New()
	var unknown []int
	for _, id := range cores.List() {
		found := false
		for _, c := range g.Node.Cores {
			if c.ID == id {
				out, found = out.Union(c.CPUs), true
				break
			}
		}
		if !found {
			unknown = append(unknown, id)
		}
	}
	return out, unknown
}

// gpu is node.gpus' entry of NVML index i, or nil.
func (g *gresFile) gpu(i int) *gresGPU {
	for k := range g.Node.GPUs {
		if g.Node.GPUs[k].Index == i {
			return &g.Node.GPUs[k]
		}
	}
	return nil
}

// cpuNUMANodes counts the NUMA nodes that have CPUs.
func (g *gresFile) cpuNUMANodes() int {
	n := 0
	for _, x := range g.Node.NUMA {
		if !x.CPUs.IsEmpty() {
			n++
		}
	}
	return n
}
