// Command rankprobe prints, as JSON, where the kernel placed it: the
// Cpus_allowed_list and Mems_allowed_list lines of /proc/self/status, its
// memory policy (get_mempolicy), CUDA_VISIBLE_DEVICES and every NCCL_*
// variable. srunwrap's tests exec it to see what a rank really got.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Probe is rankprobe's output.
type Probe struct {
	CPUsAllowed  string            `json:"cpus_allowed_list"`
	MemsAllowed  string            `json:"mems_allowed_list"`
	MemPolicy    string            `json:"mem_policy"` // "default", "preferred", "bind", "interleave", "local", ...
	MemNodes     []int             `json:"mem_nodes"`
	MemPolicyErr string            `json:"mem_policy_error,omitempty"`
	Visible      *string           `json:"cuda_visible_devices"` // null when unset
	NCCL         map[string]string `json:"nccl"`
	// ParentComm is the parent's command name: slurmstepd when srunwrap
	// exec'd the probe rather than running it as a child.
	ParentComm string `json:"parent_comm"`
	ProcID     string `json:"slurm_procid"`
}

var modes = []string{"default", "preferred", "bind", "interleave", "local", "preferred_many", "weighted_interleave"}

func main() {
	var p Probe
	f, err := os.Open("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rankprobe:", err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		switch k {
		case "Cpus_allowed_list":
			p.CPUsAllowed = strings.TrimSpace(v)
		case "Mems_allowed_list":
			p.MemsAllowed = strings.TrimSpace(v)
		}
	}
	f.Close()
	var mode int32
	mask := make([]uint64, 16) // 1024 nodes
	_, _, errno := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)),
		uintptr(unsafe.Pointer(&mask[0])), uintptr(len(mask)*64), 0, 0, 0)
	if errno != 0 {
		p.MemPolicyErr = errno.Error()
	} else {
		p.MemPolicy = fmt.Sprint(mode)
		if m := int(mode) &^ (1<<15 | 1<<14 | 1<<13); m < len(modes) { // strip MPOL_F_* mode flags
			p.MemPolicy = modes[m]
		}
		p.MemNodes = []int{}
		for i := 0; i < len(mask)*64; i++ {
			if mask[i/64]&(1<<(i%64)) != 0 {
				p.MemNodes = append(p.MemNodes, i)
			}
		}
	}
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		p.Visible = &v
	}
	p.NCCL = map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "NCCL_") {
			p.NCCL[k] = v
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", os.Getppid())); err == nil {
		p.ParentComm = strings.TrimSpace(string(b))
	}
	p.ProcID = os.Getenv("SLURM_PROCID")
	// One line per probe: the ranks of a step print into one stream.
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(p); err != nil {
		fmt.Fprintln(os.Stderr, "rankprobe:", err)
		os.Exit(1)
	}
}
