package nodedesc

import (
	"slices"
	"strconv"

	"gpuprep/lib/srunconf"
)

// encodeSettings writes [srunwrap] and the [[nccl.fabric]] tables.
func encodeSettings(w *lineWriter, d *Description) {
	s := d.Srunwrap
	w.line("srunwrap", "gpu", s.GPU)
	w.line("srunwrap", "cpu_binding", s.CPUBinding)
	w.line("srunwrap", "memory", s.Memory)
	w.line("srunwrap", "gpu_memory_nodes", strconv.FormatBool(s.GPUMemoryNodes))
	for _, c := range sortedKeys(s.Checks) {
		w.line("srunwrap_check", c, s.Checks[c])
	}
	for i, f := range d.NCCL.Fabrics {
		n := strconv.Itoa(i)
		w.line("fabric", n, "name", f.Name)
		w.line("fabric", n, "nodes", f.Nodes)
		w.line("fabric", n, "ib_hca", f.IBHCA)
		for _, v := range f.Partitions {
			w.line("fabric", n, "partition", v)
		}
		for _, v := range f.Products {
			w.line("fabric", n, "product", v)
		}
		for _, v := range f.Force {
			w.line("fabric", n, "force", v)
		}
		for _, k := range sortedKeys(f.Env) {
			w.line("fabric_env", n, k, f.Env[k])
		}
	}
}

// settingsFact adds a srunwrap, srunwrap_check, fabric or fabric_env line.
func (p *parser) settingsFact(d *Description, f []string) error {
	s := &d.Srunwrap
	switch f[0] {
	case "srunwrap":
		switch f[1] {
		case "gpu":
			s.GPU = f[2]
		case "cpu_binding":
			s.CPUBinding = f[2]
		case "memory":
			s.Memory = f[2]
		case "gpu_memory_nodes":
			v, err := strconv.ParseBool(f[2])
			if err != nil {
				return p.errorf("srunwrap gpu_memory_nodes: %v", err)
			}
			s.GPUMemoryNodes = v
		}
	case "srunwrap_check":
		if s.Checks == nil {
			s.Checks = map[string]string{}
		}
		s.Checks[f[1]] = f[2]
	case "fabric", "fabric_env":
		i := p.int(f[1])
		if i < 0 || i > len(d.NCCL.Fabrics) {
			return p.errorf("%s %s: fabrics are numbered from 0 in order", f[0], f[1])
		}
		if i == len(d.NCCL.Fabrics) {
			d.NCCL.Fabrics = append(d.NCCL.Fabrics, srunconf.NCCLFabric{})
		}
		fb := &d.NCCL.Fabrics[i]
		if f[0] == "fabric_env" {
			if fb.Env == nil {
				fb.Env = map[string]string{}
			}
			fb.Env[f[2]] = f[3]
			return nil
		}
		switch f[2] {
		case "name":
			fb.Name = f[3]
		case "nodes":
			fb.Nodes = f[3]
		case "ib_hca":
			fb.IBHCA = f[3]
		case "partition":
			fb.Partitions = append(fb.Partitions, f[3])
		case "product":
			fb.Products = append(fb.Products, f[3])
		case "force":
			fb.Force = append(fb.Force, f[3])
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
