package config

import (
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gpuprep/lib/slurm"
	"gpuprep/lib/srunconf"
	"gpuprep/lib/suggest"
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkSrunwrap(s *srunconf.SrunwrapSection, ps *problems) {
	k := func(name ...string) []string { return append([]string{"srunwrap"}, name...) }
	checkOneOf(k("gpu"), s.GPU, []string{srunconf.GPUNarrow, srunconf.GPUKeep, srunconf.GPUOff}, ps)
	checkOneOf(k("cpu_binding"), s.CPUBinding, []string{srunconf.CPUKeep, srunconf.CPUReplace, srunconf.CPUOff}, ps)
	checkOneOf(k("memory"), s.Memory, []string{srunconf.MemBind, srunconf.MemPreferred, srunconf.MemOff}, ps)
	for _, c := range slices.Sorted(maps.Keys(s.Checks)) {
		if !slices.Contains(srunconf.SrunwrapChecks, c) {
			ps.add(k("checks", c), "%s: no such check (checks: %s)%s", formatKey(k("checks", c)), strings.Join(srunconf.SrunwrapChecks, ", "), suggest.DidYouMean(c, srunconf.SrunwrapChecks))
			continue
		}
		checkOneOf(k("checks", c), s.Checks[c], []string{srunconf.CheckWarn, srunconf.CheckRefuse, srunconf.CheckOff}, ps)
	}
}

func checkNCCL(n *srunconf.NCCLSection, ps *problems) {
	for i, f := range n.Fabrics {
		name := f.Name
		if name == "" {
			name = "#" + strconv.Itoa(i+1)
		}
		k := func(key string) []string { return []string{"nccl", "fabric", name, key} }
		if f.Nodes != "" {
			if _, err := slurm.ParseHostlist(f.Nodes); err != nil {
				ps.add(k("nodes"), "%s: not a hostlist expression: %v", formatKey(k("nodes")), err)
			}
		}
		for _, p := range f.Products {
			if _, err := path.Match(p, ""); err != nil {
				ps.add(k("products"), "%s: %q is not a pattern: %v", formatKey(k("products")), p, err)
			}
		}
		if f.IBHCA == "" {
			n.Fabrics[i].IBHCA = "auto"
		}
		if strings.ContainsRune(f.IBHCA, 0) || strings.ContainsRune(f.IBHCA, '\n') {
			ps.add(k("ib_hca"), "%s: holds a NUL or newline", formatKey(k("ib_hca")))
		}
		for _, v := range slices.Sorted(maps.Keys(f.Env)) {
			if v == "NCCL_IB_HCA" {
				// ib_hca decides it (default "auto"), so a value here would be
				// silently replaced.
				ps.add(k("env"), "%s: set NCCL_IB_HCA with ib_hca (\"auto\", \"off\" or the value), not in env", formatKey(k("env")))
			}
			if !envNameRE.MatchString(v) {
				ps.add(k("env"), "%s: %q is not an environment variable name", formatKey(k("env")), v)
			}
			if strings.ContainsRune(f.Env[v], 0) || strings.ContainsRune(f.Env[v], '\n') {
				ps.add(k("env"), "%s: %s holds a NUL or newline", formatKey(k("env")), v)
			}
		}
		for _, v := range f.Force {
			if _, ok := f.Env[v]; !ok && v != "NCCL_IB_HCA" {
				ps.add(k("force"), "%s: %q is not set in this fabric's env (or NCCL_IB_HCA)", formatKey(k("force")), v)
			}
		}
	}
}
