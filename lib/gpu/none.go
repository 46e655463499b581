package gpu

// None is the backend of a node without GPUs (or --gpu-backend none): no
// devices and no capability beyond the inventory.
type None struct{}

var _ Backend = None{}

// Name is "none".
func (None) Name() string { return "none" }

// Devices is empty.
func (None) Devices() ([]Device, error) { return nil, nil }

// Close does nothing.
func (None) Close() error { return nil }
