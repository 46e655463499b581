package gpumock

import (
	"os"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// installProcesses answers nvmlDeviceGetComputeRunningProcesses: the PIDs
// listed one per line in file (<root>/run/gpuprep-mock/<uuid>.pids on a
// fixture root), so a test or a demo can make a simulated GPU busy; none
// when file is "" or absent. Graphics processes are NOT_SUPPORTED, as on
// data-centre GPUs.
func installProcesses(d *server.Device, file string) {
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		if file == "" {
			return nil, nvml.SUCCESS
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, nvml.SUCCESS
		}
		var out []nvml.ProcessInfo
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.ParseUint(f, 10, 32); err == nil {
				out = append(out, nvml.ProcessInfo{Pid: uint32(pid)})
			}
		}
		return out, nvml.SUCCESS
	}
	d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
}
