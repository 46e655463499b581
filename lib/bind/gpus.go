package bind

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/srunconf"

	"gpuprep/lib/slurm"
	"gpuprep/lib/textfmt"
	"gpuprep/lib/topo"
)

// A message that shows a list and one entry of it (CUDA_VISIBLE_DEVICES
// and one GPU in it) shows at most pairMax bytes of the list and entryMax
// of the entry, so that the line stays under 400 bytes however long they
// are (srunconf.ShowN).
const (
	pairMax  = 120
	entryMax = 60
)

// visible is one GPU the task sees.
type visible struct {
	g     *topo.GPU
	mig   string // MIG device UUID, "" for a whole GPU
	entry string // the entry as written (CUDA_VISIBLE_DEVICES), or the UUID
	src   string // the variable it came from
	// misread is set for an index entry that CUDA may read as another GPU
	// than g (gres.conf lists GPUs out of PCI bus order): name g by UUID.
	misread bool
}

// rank is what the GPU step decided for one rank.
type rank struct {
	gpu  *topo.GPU   // the rank's GPU; nil when none was chosen
	gpus []*topo.GPU // the GPUs whose CPUs the rank follows
}

// visibleGPUs maps the task's visible devices to the node's GPUs.
// CUDA_VISIBLE_DEVICES entries are GPU UUIDs (matched against GPU.UUID),
// MIG UUIDs (GPU.MIG.Devices[].UUID, or the older MIG-GPU-<uuid>/<gi>/<ci>
// naming the parent) or indices: positions in SLURM_STEP_GPUS when that is
// set (Slurm renumbers from 0 when cgroups confine devices), else node GPU
// indexes. Without CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS names node GPU
// indexes. Slurm's indexes (SLURM_STEP_GPUS, and CUDA_VISIBLE_DEVICES
// when Slurm wrote it) are mapped through in.SlurmGPUs. Anything that
// matches no GPU is a Warning.
func visibleGPUs(in Input) ([]visible, *Warning) {
	n, t := in.Node, in.Task
	bad := func(format string, a ...any) ([]visible, *Warning) {
		return nil, &Warning{CheckInput, fmt.Sprintf(format, a...) + ": running unbound"}
	}
	if len(t.VisibleDevices) == 0 {
		if len(t.StepGPUs) == 0 {
			return bad("no GPU visible (CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS unset or empty)")
		}
		var out []visible
		for _, i := range t.StepGPUs {
			g := in.slurmGPU(i)
			if g == nil {
				return bad("SLURM_STEP_GPUS=%s: GPU %d is not among this node's GPUs (%s)", srunconf.Show(textfmt.JoinInts(t.StepGPUs, ",")), i, gpuIndexes(n))
			}
			e := g.UUID
			if e == "" {
				e = strconv.Itoa(i)
			}
			out = append(out, visible{g: g, entry: e, src: "SLURM_STEP_GPUS"})
		}
		return out, nil
	}
	cvd := srunconf.ShowN(deviceList(t.VisibleDevices), pairMax)
	positional := len(t.StepGPUs) > 0 && !sameIndexes(t.VisibleDevices, t.StepGPUs)
	var stepGPUs []*topo.GPU // the step's GPUs, for how CUDA numbers them
	for _, s := range t.StepGPUs {
		stepGPUs = append(stepGPUs, in.slurmGPU(s))
	}
	out := make([]visible, 0, len(t.VisibleDevices))
	for _, d := range t.VisibleDevices {
		v := visible{entry: d.String(), src: "CUDA_VISIBLE_DEVICES"}
		switch {
		case d.IsMIG():
			v.mig = d.UUID
			if v.g = gpuOfMIG(n, d.UUID); v.g == nil {
				return bad("CUDA_VISIBLE_DEVICES=%s: MIG device %s is on none of this node's GPUs", cvd, srunconf.ShowN(d.UUID, entryMax))
			}
		case d.UUID != "":
			if v.g = gpuByUUID(n, d.UUID); v.g == nil {
				return bad("CUDA_VISIBLE_DEVICES=%s: GPU %s is not on this node", cvd, srunconf.ShowN(d.UUID, entryMax))
			}
		default:
			i := d.Index
			if positional {
				if i >= len(t.StepGPUs) {
					return bad("CUDA_VISIBLE_DEVICES=%s: index %d is beyond SLURM_STEP_GPUS=%s", cvd, i, srunconf.ShowN(textfmt.JoinInts(t.StepGPUs, ","), entryMax))
				}
				i = t.StepGPUs[i]
			}
			if len(t.StepGPUs) > 0 {
				v.g = in.slurmGPU(i) // Slurm's index
			} else {
				v.g = gpuByIndex(n, i) // set by hand: the node's
			}
			if v.g == nil {
				return bad("CUDA_VISIBLE_DEVICES=%s: GPU %d is not among this node's GPUs (%s)", cvd, i, gpuIndexes(n))
			}
			v.misread = !in.cudaReads(d.Index, v.g, stepGPUs, positional)
		}
		out = append(out, v)
	}
	return out, nil
}

// sameIndexes says whether CUDA_VISIBLE_DEVICES lists exactly
// SLURM_STEP_GPUS, as Slurm writes it when cgroups do not confine devices:
// then the indices are the node's, not positions in the step's list.
func sameIndexes(refs []slurm.DeviceRef, step []int) bool {
	if len(refs) != len(step) {
		return false
	}
	for i, d := range refs {
		if d.UUID != "" || d.Index != step[i] {
			return false
		}
	}
	return true
}

// chooseGPUs sets the classes: each rank's GPU is the one visible GPU, or
// visible GPU i mod n when the rank count is a multiple of n
// (srunwrap.gpu narrow or keep). Otherwise (srunwrap.gpu off, or counts
// that do not divide) no rank has a GPU of its own and each follows every
// visible GPU's CPUs.
func (l *layout) chooseGPUs() {
	in, vis := l.in, l.vis
	nr, n := l.nr, len(vis)
	l.choose = in.Config.GPU != srunconf.GPUOff && n > 0 && (n == 1 || nr%n == 0)
	if !l.choose {
		all := make([]*topo.GPU, 0, n)
		for _, v := range vis {
			if !slices.Contains(all, v.g) {
				all = append(all, v.g)
			}
		}
		if in.Config.GPU != srunconf.GPUOff && nr > 1 {
			l.spread = &Warning{"placement", fmt.Sprintf("%d local ranks do not divide among %d visible GPUs: no rank has a GPU of its own; each is placed near all of them", nr, n)}
		}
		l.classes = []class{{r: rank{gpus: all}}}
		return
	}
	narrow := in.Config.GPU == srunconf.GPUNarrow
	l.classes = make([]class, n)
	for c, v := range vis {
		cl := &l.classes[c]
		cl.r = rank{gpu: v.g, gpus: []*topo.GPU{v.g}}
		name := v.entry
		if v.misread && v.g.UUID != "" {
			name = v.g.UUID
		}
		switch {
		case narrow && (n > 1 || v.src != "CUDA_VISIBLE_DEVICES" || name != v.entry):
			cl.visible = name
		case v.misread:
			cl.gpuWarn = &Warning{CheckInput, fmt.Sprintf(
				"CUDA_VISIBLE_DEVICES=%s: CUDA may read index %s as another GPU than Slurm's (%s, /dev/nvidia%d): "+
					"gres.conf lists GPUs out of PCI bus order; srunwrap.gpu = %q leaves it",
				srunconf.ShowN(deviceList(in.Task.VisibleDevices), pairMax), srunconf.ShowN(v.entry, entryMax), v.g.BusID, v.g.Minor, in.Config.GPU)}
		}
	}
}

// planGPU sets local rank i's GPU (it is of class c).
func (l *layout) planGPU(i, c int, p *Plan) {
	if !l.choose {
		if l.spread != nil {
			p.Warnings = append(p.Warnings, *l.spread)
		}
		return
	}
	v, cl := l.vis[c], &l.classes[c]
	g := &GPUChoice{Index: v.g.Index, UUID: v.g.UUID, MIG: v.mig, BusID: v.g.BusID, NUMA: v.g.NUMA}
	if !l.in.Brief {
		g.From = gpuFrom(v, i, l.nr, len(l.vis))
	}
	p.GPU, p.Visible = g, cl.visible
	if cl.gpuWarn != nil {
		p.Warnings = append(p.Warnings, *cl.gpuWarn)
	}
}

// cudaReads says whether CUDA surely reads CUDA_VISIBLE_DEVICES index i as
// g. CUDA numbers the GPUs a task can open in PCI bus order (its order with
// CUDA_DEVICE_ORDER=PCI_BUS_ID, and its default one on a node of one GPU
// model): every GPU of the node, or only the step's when Slurm's cgroup
// confines devices (it then renumbers CUDA_VISIBLE_DEVICES from 0, the
// positional case). Slurm numbers GPUs in gres.conf order, so the two agree
// only where gres.conf follows the bus order. When CUDA_VISIBLE_DEVICES
// equals SLURM_STEP_GPUS and the step has GPUs 0..k-1, both readings are
// possible, and both must give g. stepGPUs are the node's GPUs of
// SLURM_STEP_GPUS, in its order.
func (in Input) cudaReads(i int, g *topo.GPU, stepGPUs []*topo.GPU, positional bool) bool {
	step := in.Task.StepGPUs
	confined := len(step) > 0 && (positional || isFirstIndexes(step))
	if confined && cudaIndex(stepGPUs, g) != i {
		return false
	}
	if !positional && g.Index != i {
		return false // unconfined: CUDA's index i is the node's GPU i
	}
	return true
}

// cudaIndex is g's position among gpus in PCI bus order, -1 when g is not
// among them.
func cudaIndex(gpus []*topo.GPU, g *topo.GPU) int {
	if !slices.Contains(gpus, g) {
		return -1
	}
	k := 0
	for _, h := range gpus {
		if h != nil && h != g && h.Index < g.Index {
			k++
		}
	}
	return k
}

// isFirstIndexes says whether s lists 0..len(s)-1 in some order.
func isFirstIndexes(s []int) bool {
	for _, x := range s {
		if x < 0 || x >= len(s) {
			return false
		}
	}
	return true
}

// slurmGPU is the node's GPU that Slurm numbers i: through SlurmGPUs
// (gres.conf order) when known, else the GPU with index i (PCI order).
func (in Input) slurmGPU(i int) *topo.GPU {
	if in.SlurmGPUs == nil {
		return gpuByIndex(in.Node, i)
	}
	if i < 0 || i >= len(in.SlurmGPUs) {
		return nil
	}
	for k := range in.Node.GPUs {
		if in.Node.GPUs[k].Minor == in.SlurmGPUs[i] {
			return &in.Node.GPUs[k]
		}
	}
	return nil
}

func gpuByIndex(n *topo.Node, i int) *topo.GPU {
	for k := range n.GPUs {
		if n.GPUs[k].Index == i {
			return &n.GPUs[k]
		}
	}
	return nil
}

func gpuByUUID(n *topo.Node, uuid string) *topo.GPU {
	for k := range n.GPUs {
		if strings.EqualFold(n.GPUs[k].UUID, uuid) {
			return &n.GPUs[k]
		}
	}
	return nil
}

// gpuOfMIG finds the GPU holding a MIG device: by the device's UUID, or
// by the parent GPU UUID of the older "MIG-GPU-<uuid>/<gi>/<ci>" form.
func gpuOfMIG(n *topo.Node, uuid string) *topo.GPU {
	for k := range n.GPUs {
		for _, m := range n.GPUs[k].MIG.Devices {
			if m.UUID != "" && strings.EqualFold(m.UUID, uuid) {
				return &n.GPUs[k]
			}
		}
	}
	if rest, ok := strings.CutPrefix(uuid, "MIG-GPU-"); ok {
		parent, _, _ := strings.Cut(rest, "/")
		return gpuByUUID(n, "GPU-"+parent)
	}
	return nil
}

func gpuIndexes(n *topo.Node) string {
	if len(n.GPUs) == 0 {
		return "none"
	}
	l := make([]int, len(n.GPUs))
	for i, g := range n.GPUs {
		l[i] = g.Index
	}
	return textfmt.JoinInts(l, ",")
}

func deviceList(l []slurm.DeviceRef) string {
	s := make([]string, len(l))
	for i, d := range l {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}

// gpuFrom says where local rank i of nr got the GPU v, one of n visible.
func gpuFrom(v visible, i, nr, n int) string {
	if n == 1 {
		return fmt.Sprintf("%s=%s (the one visible GPU)", v.src, srunconf.Show(v.entry))
	}
	return fmt.Sprintf("%s=%s (local rank %d of %d, GPU %d mod %d)", v.src, srunconf.Show(v.entry), i, nr, i, n)
}
