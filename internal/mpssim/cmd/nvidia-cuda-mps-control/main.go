// Command nvidia-cuda-mps-control is a simulated MPS control daemon for
// `make demo` (bin/sim/nvidia-cuda-mps-control; never installed): see
// package gpuprep/internal/mpssim. Run as nvidia-cuda-mps-server (a link
// or copy of that name) it plays the MPS server.
package main

import (
	"os"

	"gpuprep/internal/mpssim"
)

func main() { os.Exit(mpssim.Main(os.Args, os.Getenv)) }
