//go:build gpuprep_mock

package cli

// A build with -tags gpuprep_mock (bin/sim: the demo, the benchmarks and
// the end-to-end tests) can open --gpu-backend mock:<model>.
import _ "gpuprep/internal/gpumock"
