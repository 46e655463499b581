package nccl

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"gpuprep/lib/host"
)

// MinMemlock is the soft RLIMIT_MEMLOCK below which the memlock check
// warns. Memory that InfiniBand/RoCE verbs register (ibv_reg_mr), and the
// queues of every QP and CQ, count against RLIMIT_MEMLOCK; CUDA's own
// pinned host memory does not. Without GPUDirect RDMA, NCCL's network
// transport registers host staging buffers of NCCL_BUFFSIZE (4 MiB) per
// channel and connection: 32 channels with a send and a receive
// connection is 256 MiB for one ring, before the tree's, the LL and LL128
// protocols' and a second communicator's. 1 GiB leaves room for that;
// 64 KiB (what slurmd started by systemd hands its jobs by default) fails
// at the first QP.
const MinMemlock = 1 << 30

// Memlock is the process's soft RLIMIT_MEMLOCK in bytes
// (unix.RLIM_INFINITY when unlimited).
func Memlock() (uint64, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return 0, fmt.Errorf("getrlimit RLIMIT_MEMLOCK: %w", err)
	}
	return rl.Cur, nil
}

// checkMemlock is the memlock check. It says nothing when no RDMA device
// is visible or NCCL's IB transport is off: then nothing NCCL pins counts
// against the limit.
func checkMemlock(r host.Root, env func(string) string, memlock uint64) []Finding {
	if memlock == unix.RLIM_INFINITY || memlock >= MinMemlock {
		return nil
	}
	if devs, _ := r.ReadDir(ibClass); len(devs) == 0 {
		return nil
	}
	if n, ok := strtol(env("NCCL_IB_DISABLE")); ok && n != 0 {
		return nil
	}
	return []Finding{{Check: "memlock", Msg: fmt.Sprintf("locked-memory limit (ulimit -l, RLIMIT_MEMLOCK) is %s, below the %s NCCL needs to register memory with InfiniBand/RoCE: NCCL fails (\"Cannot allocate memory\") or falls back to TCP sockets. "+
		"Fix on the node: LimitMEMLOCK=infinity for slurmd.service (systemctl edit slurmd), and PropagateResourceLimitsExcept=MEMLOCK in slurm.conf so that srun does not copy the login shell's limit to the job",
		sizeString(memlock), sizeString(MinMemlock))}}
}

// size writes a file size in the largest binary unit it reaches, to one
// decimal ("16 MiB", "70.3 KiB", "900 bytes").
func size(b int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if b < 1024 {
		return fmt.Sprintf("%d bytes", b)
	}
	v, i := float64(b)/1024, 0
	for i < len(units)-1 && v >= 1024 {
		v /= 1024
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + units[i]
}

// sizeString writes a byte count in the largest binary unit that divides
// it ("64 KiB", "1 GiB").
func sizeString(b uint64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for i < len(units)-1 && b >= 1024 && b%1024 == 0 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%d %s", b, units[i])
}
