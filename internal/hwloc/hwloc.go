// Package hwloc reads a fixture root (or the real node) through Debian's
// hwloc, `HWLOC_FSROOT=<root> lstopo-no-graphics --of xml`, so tests can hold
// gpuprep's node model against an independent reading. hwloc's logical core
// index (Core L#) is what gres.conf Cores= counts. With GPUPREP_ORACLE_ROOT
// set, lstopo is that Debian root's (internal/oracleroot, test/matrix).
package hwloc

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"gpuprep/internal/oracleroot"
	"gpuprep/lib/cpuset"
)

// Topology is what hwloc found.
type Topology struct {
	Packages []Object // in logical order
	Cores    []Object // in logical order: Cores[i] is Core L#i
	PUs      []Object
	NUMA     []Object
	PCI      []string // PCI bus ids hwloc discovered
}

// Object is one hwloc object.
type Object struct {
	OSIndex int
	CPUs    cpuset.Set
	Package int // OS index of the enclosing package, -1 if none
}

// Available says whether lstopo-no-graphics is installed (in
// $GPUPREP_ORACLE_ROOT when set: internal/oracleroot).
func Available() bool {
	_, err := oracleroot.LookPath("lstopo-no-graphics")
	return err == nil
}

// Read runs lstopo on root and parses its XML.
func Read(root string) (*Topology, error) { return ReadArgs(root) }

// SlurmFilters are lstopo options that load the topology as Slurm's slurmd
// does (src/slurmd/common/xcpuinfo.c): the whole system, without L1, L2, L4
// and L5 caches or Misc objects, and without instruction caches (hwloc's
// library drops them by default, lstopo does not). hwloc's logical core
// index (Core L#) is then computed on the same tree as Slurm's abstract
// core ids (gres.conf Cores=).
var SlurmFilters = []string{"--disallowed", "--no-icaches",
	"--filter", "l1cache:none", "--filter", "l2cache:none",
	"--filter", "l4cache:none", "--filter", "l5cache:none", "--filter", "misc:none"}

// ReadArgs is Read with more lstopo options, such as SlurmFilters. It runs
// the lstopo of $GPUPREP_ORACLE_ROOT when set (internal/oracleroot).
func ReadArgs(root string, args ...string) (*Topology, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = append([]string{"--of", "xml", "--whole-io"}, args...)
	cmd, err := oracleroot.Command(ctx, oracleroot.Spec{Tool: "lstopo-no-graphics", Args: args,
		// hwloc hides NVIDIA GPU memory NUMA nodes (Grace Hopper) by
		// default; gpuprep models them, so keep them.
		Env: []string{"HWLOC_FSROOT=" + root, "HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1",
			// The x86 backend would add this machine's CPU model to a fixture.
			"HWLOC_COMPONENTS=-x86", "PATH=/usr/bin:/bin"}})
	if err != nil {
		return nil, fmt.Errorf("lstopo on %s: %w", root, err)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("lstopo on %s: %w: %s", root, err, strings.TrimSpace(errb.String()))
	}
	return Parse(out.Bytes())
}

type xmlObject struct {
	Type     string      `xml:"type,attr"`
	OSIndex  *int        `xml:"os_index,attr"`
	CPUSet   string      `xml:"cpuset,attr"`
	BusID    string      `xml:"pci_busid,attr"`
	Children []xmlObject `xml:"object"`
}

type xmlTopology struct {
	Objects []xmlObject `xml:"object"`
}

// Parse reads lstopo's XML output.
func Parse(data []byte) (*Topology, error) {
	var x xmlTopology
	if err := xml.Unmarshal(data, &x); err != nil {
		return nil, fmt.Errorf("hwloc xml: %w", err)
	}
	t := &Topology{}
	var walk func(o xmlObject, pkg int) error
	walk = func(o xmlObject, pkg int) error {
		obj := Object{OSIndex: -1, Package: pkg}
		if o.OSIndex != nil {
			obj.OSIndex = *o.OSIndex
		}
		if o.CPUSet != "" {
			s, err := parseHwlocSet(o.CPUSet)
			if err != nil {
				return err
			}
			obj.CPUs = s
		}
		switch o.Type {
		case "Package":
			pkg = obj.OSIndex
			obj.Package = pkg
			t.Packages = append(t.Packages, obj)
		case "Core":
			t.Cores = append(t.Cores, obj)
		case "PU":
			t.PUs = append(t.PUs, obj)
		case "NUMANode":
			t.NUMA = append(t.NUMA, obj)
		case "PCIDev":
			t.PCI = append(t.PCI, o.BusID)
		}
		for _, c := range o.Children {
			if err := walk(c, pkg); err != nil {
				return err
			}
		}
		return nil
	}
	for _, o := range x.Objects {
		if err := walk(o, -1); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// parseHwlocSet reads hwloc's bitmap format: "0xffffffff,0x00000001" (32-bit
// words, most significant first). An infinite set ("0xf...f,...") is not
// expected for CPU objects.
func parseHwlocSet(s string) (cpuset.Set, error) {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimPrefix(p, "0x")
		if p == "" {
			p = "0"
		}
		parts[i] = p
	}
	if strings.HasPrefix(parts[0], "f...f") {
		return cpuset.Set{}, fmt.Errorf("hwloc set %q is infinite", s)
	}
	return cpuset.ParseMask(strings.Join(parts, ","))
}
