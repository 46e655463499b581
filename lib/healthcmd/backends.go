package healthcmd

// NVML is this command's GPU backend besides lib/gpu's own procfs and none;
// it registers itself when linked in. Programs that need no NVML (srunwrap)
// leave it out and stay small.
import _ "gpuprep/lib/gpu/nvmlgpu"
