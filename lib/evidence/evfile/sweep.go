package evfile

import "gpuprep/lib/state"

// Sweep removes the temporary files of record writes whose writer died
// (".<name>.tmp-<pid>" whose pid is gone) and returns their names. Call it
// under the node lock, which every writer of records holds.
func (d *Dir) Sweep() ([]string, error) {
	if err := d.writable("sweep"); err != nil {
		return nil, err
	}
	return state.SweepIn(d.d, isTemp)
}
