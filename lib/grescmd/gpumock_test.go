package grescmd

// The go-nvml mock servers (--gpu-backend mock:<model>) for these tests.
import _ "gpuprep/internal/gpumock"
