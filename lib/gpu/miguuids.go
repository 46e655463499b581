package gpu

import "fmt"

// FillMIGUUIDs gives the MIG devices of devs their UUIDs where the listing
// left them out (a light listing, the procfs part of a backend): for each
// GPU with a MIG device lacking a UUID it reads the GPU's MIG state
// through b's MIGReader and keeps the cap minors of the listing where the
// reader has none. A backend that cannot read MIG state changes nothing.
// It reads nothing for a GPU whose MIG devices all have UUIDs.
func FillMIGUUIDs(b Backend, devs []Device) error {
	mr, ok := As[MIGReader](b)
	if !ok {
		return nil
	}
	for i := range devs {
		d := &devs[i]
		if !LacksMIGUUIDs(devs[i : i+1]) {
			continue
		}
		st, err := mr.MIG(d.Index)
		if err != nil {
			return fmt.Errorf("GPU %d (%s): MIG devices: %w", d.Index, d.BusID, err)
		}
		d.MIG = MergeMIG(d.MIG, st)
	}
	return nil
}

// LacksMIGUUIDs says whether a MIG device of devs has no UUID (a light
// listing's: FillMIGUUIDs reads them).
func LacksMIGUUIDs(devs []Device) bool {
	for _, d := range devs {
		for _, m := range d.MIG.Devices {
			if m.UUID == "" {
				return true
			}
		}
	}
	return false
}

// MergeMIG is the reader's state read (UUIDs, profiles, mode) with the cap
// minors of the listing where the reader has none (matched by GPU and
// compute instance ids).
func MergeMIG(listed, read MIGState) MIGState {
	for i := range read.Devices {
		m := &read.Devices[i]
		for _, l := range listed.Devices {
			if l.GI != m.GI || l.CI != m.CI {
				continue
			}
			if m.GICapMinor < 0 {
				m.GICapMinor = l.GICapMinor
			}
			if m.CICapMinor < 0 {
				m.CICapMinor = l.CICapMinor
			}
		}
	}
	return read
}
