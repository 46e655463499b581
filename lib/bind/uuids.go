package bind

import (
	"errors"
	"fmt"
	"strings"
)

// RankUUIDs returns the UUIDs of the devices rank p's command sees, in
// CUDA_VISIBLE_DEVICES order: p's GPU alone when the plan narrows
// CUDA_VISIBLE_DEVICES to it or it is the one visible device, else every
// device the task sees (srunwrap.gpu = "keep" or "off", or ranks that do
// not divide among the GPUs). A MIG device is named by its own UUID, as
// the node description spells it, a whole GPU by the GPU's. lib/mps keys
// a control daemon by these (mps.Key). A device the node does not know,
// or a GPU without a UUID, is an error; so is a task that sees no GPU.
func RankUUIDs(in Input, p Plan) ([]string, error) {
	vis, w := visibleGPUs(in)
	if w != nil {
		return nil, errors.New(strings.TrimSuffix(w.Msg, ": running unbound"))
	}
	if p.GPU != nil && (p.Visible != "" || len(vis) == 1) {
		for _, v := range vis {
			if v.g.Index == p.GPU.Index && strings.EqualFold(v.mig, p.GPU.MIG) {
				return []string{v.uuid()}, check(v)
			}
		}
		return nil, fmt.Errorf("GPU %d is not among the task's visible devices", p.GPU.Index)
	}
	out := make([]string, len(vis))
	for i, v := range vis {
		if err := check(v); err != nil {
			return nil, err
		}
		out[i] = v.uuid()
	}
	return out, nil
}

// uuid is the device's UUID: the MIG device's as the node spells it (as
// written when the node does not list it), else the GPU's.
func (v visible) uuid() string {
	if v.mig == "" {
		return v.g.UUID
	}
	for _, m := range v.g.MIG.Devices {
		if strings.EqualFold(m.UUID, v.mig) {
			return m.UUID
		}
	}
	return v.mig
}

func check(v visible) error {
	if v.mig == "" && v.g.UUID == "" {
		return fmt.Errorf("GPU %d (%s) has no UUID in the node description", v.g.Index, v.g.BusID)
	}
	return nil
}
