package mps

import (
	"errors"
	"fmt"
	"os"

	"gpuprep/lib/host"
)

// ControlName is the MPS control program; ServerName the server it starts.
const (
	ControlName = "nvidia-cuda-mps-control"
	ServerName  = "nvidia-cuda-mps-server"
)

// SearchDirs are the node directories Find looks in, in order: the
// driver's packages install to /usr/bin, the .run installer to
// /usr/local/bin or /usr/bin, the CUDA toolkit to /usr/local/cuda/bin.
// slurmd runs the prolog with no useful PATH, so PATH is not read.
var SearchDirs = []string{"/usr/bin", "/usr/local/bin", "/usr/local/cuda/bin"}

// ErrNoMPS is wrapped by Find's error when no directory has the program.
var ErrNoMPS = errors.New("no " + ControlName)

// Find returns the path on this machine of nvidia-cuda-mps-control under
// root r: the first of SearchDirs holding an executable regular file of
// that name (a symlink to one counts). None is an error wrapping ErrNoMPS.
func Find(r host.Root) (string, error) {
	for _, d := range SearchDirs {
		p := r.Path(d + "/" + ControlName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("mps: %w in /usr/bin, /usr/local/bin or /usr/local/cuda/bin (MPS comes with the NVIDIA driver's utilities)", ErrNoMPS)
}
