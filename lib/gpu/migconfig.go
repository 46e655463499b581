package gpu

import "errors"

// ErrResetRequired wraps a MIG mode change that only takes effect after a
// GPU reset which the driver could not do (a process holds the GPU, or the
// platform does not expose reset, as in pass-through VMs).
var ErrResetRequired = errors.New("GPU reset")

// MIGConfigurer changes one GPU's MIG layout, the job of `nvidia-smi mig`
// and mig-parted. It does not verify: callers read the layout back with
// MIGReader and compare.
type MIGConfigurer interface {
	// SetMIGLayout makes GPU index's MIG devices the given profiles ("3g.40gb",
	// "1c.3g.40gb"; one entry per MIG device); an empty list turns MIG off.
	// It destroys every compute and GPU instance first, then sets the MIG
	// mode, then creates one GPU instance with one compute instance per
	// profile, largest first. A mode change that needs a reset the driver
	// could not do is an error matching ErrResetRequired (errors.Is).
	SetMIGLayout(index int, profiles []string) error
	// CheckMIGLayout says whether SetMIGLayout could make these profiles
	// on GPU index (each is one of its MIG profiles), changing nothing.
	CheckMIGLayout(index int, profiles []string) error
}
