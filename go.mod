module gpuprep

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/NVIDIA/go-nvml v0.13.4-1
	github.com/spf13/pflag v1.1.0
	golang.org/x/sys v0.50.0
)

require github.com/google/uuid v1.6.0 // indirect
