package gpu

import "fmt"

// None is the backend of a node without GPUs (or --gpu-backend none): no
// devices, and every per-GPU call fails because no index exists.
type None struct{}

var _ Backend = None{}

// Name is "none".
func (None) Name() string { return "none" }

// Devices is empty.
func (None) Devices() ([]Device, error) { return nil, nil }

func noGPU(index int) error { return fmt.Errorf("gpu: no GPU %d (backend none)", index) }

// Settings fails: there is no GPU.
func (None) Settings(index int) (Settings, error) { return Settings{}, noGPU(index) }

// Health fails: there is no GPU.
func (None) Health(index int) (Health, error) { return Health{}, noGPU(index) }

func (None) SetPersistence(index int, on bool) error                    { return noGPU(index) }
func (None) SetComputeMode(index int, mode ComputeMode) error           { return noGPU(index) }
func (None) SetApplicationClocks(index int, memMHz, smMHz uint32) error { return noGPU(index) }
func (None) ResetApplicationClocks(index int) error                     { return noGPU(index) }
func (None) SetLockedClocks(index int, minMHz, maxMHz uint32) error     { return noGPU(index) }
func (None) ResetLockedClocks(index int) error                          { return noGPU(index) }
func (None) SetPowerLimit(index int, milliwatts uint32) error           { return noGPU(index) }

// Close does nothing.
func (None) Close() error { return nil }
