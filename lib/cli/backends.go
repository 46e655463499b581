package cli

// The GPU backends every program can open: procfs and none are lib/gpu's
// own; NVML registers itself when its package is linked in. The mock
// servers are linked in only by builds with -tags gpuprep_mock
// (backends_mock.go), for demos and end-to-end tests.
import _ "gpuprep/lib/gpu/nvmlgpu"
