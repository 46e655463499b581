package gpumock

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"gpuprep/lib/gpu"
	"gpuprep/lib/gpu/nvmlgpu"
	"gpuprep/lib/host"
)

// Counters are a mock GPU's cumulative counters, as its NVML field values
// (nvmlDeviceGetFieldValues, the fields of nvmlgpu.CounterField) and
// nvmlDeviceGetTotalEnergyConsumption read them. A counter not in Values
// reads as on a healthy GPU: energy DefaultEnergyMJ, every other counter 0,
// and the NVLink counters NOT_SUPPORTED on a GPU without NVLinks. A counter
// in Unsupported reads NOT_SUPPORTED, as on a GPU or driver without it.
//
// In a test holding the backend, SetCounters applies them; across
// processes (a prolog, then the epilog, run by Slurm in an e2e test), a
// mock opened on a fixture root reads them from CountersFile at every
// field-values call, so a test moves them by rewriting the file
// (WriteCounters) between two reads.
//
// Rates make counters run as on a working GPU: counter k grows by
// Rates[k] a second from Since (mJ a second is mW; ns a second of a
// clock-event counter is its share of time times 1e9), so that a prolog
// and an epilog run any time apart read a plausible job.
type Counters struct {
	Values      map[gpu.Counter]uint64  `json:"values,omitempty"`
	Unsupported []gpu.Counter           `json:"unsupported,omitempty"`
	Rates       map[gpu.Counter]float64 `json:"rates,omitempty"`
	Since       time.Time               `json:"since,omitempty"`
}

// DefaultEnergyMJ is a healthy mock GPU's energy since the driver loaded.
const DefaultEnergyMJ = 1_000_000_000

// CountersFile is where a mock on a fixture root reads a GPU's counters.
func CountersFile(root host.Root, uuid string) string {
	return root.Path("/run/gpuprep-mock/" + uuid + ".counters.json")
}

// WriteCounters writes GPU uuid's counters file under root (mode 0644, its
// folder made 0755), replacing it whole (a rename) so that a mock reading
// it meanwhile sees the old counters or the new.
func WriteCounters(root host.Root, uuid string, c Counters) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	p := CountersFile(root, uuid)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// SetCounters makes mock GPU d read the counters c (the zero Counters: a
// healthy GPU's), over its counters file if it has one. The other fields go
// on reading as before (SetFaults' recovery action).
func SetCounters(d *server.Device, c Counters) {
	installCounters(d, func() Counters { return c })
}

// installFileCounters gives d its counters at open: from its counters file
// on a fixture root, read at each call; else the defaults.
func installFileCounters(d *server.Device, root host.Root) {
	if root.IsHost() {
		installCounters(d, func() Counters { return Counters{} })
		return
	}
	file := CountersFile(root, d.UUID)
	installCounters(d, func() Counters { return readCounters(file) })
}

// readCounters is a counters file's counters; the defaults when it is
// missing or garbage.
func readCounters(file string) Counters {
	var c Counters
	b, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return Counters{}
	}
	return c
}

// installCounters answers d's counter fields and total energy from read's
// counters, passing the other fields down to the field-values function d
// had before (a layer over it, as SetFaults makes).
func installCounters(d *server.Device, read func() Counters) {
	next := d.GetFieldValuesFunc
	d.GetFieldValuesFunc = func(vs []nvml.FieldValue) nvml.Return {
		passDown(vs, next)
		c, links := read(), hasNVLinks(d)
		for i := range vs {
			if k, ok := fieldCounters[vs[i].FieldId]; ok {
				putCounter(&vs[i], k, c, links)
			}
		}
		return nvml.SUCCESS
	}
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		return read().value(gpu.EnergyMJ, hasNVLinks(d))
	}
}

// passDown has next answer vs; with no next, or a next that fails as a
// whole, every field is NOT_SUPPORTED.
func passDown(vs []nvml.FieldValue, next func([]nvml.FieldValue) nvml.Return) {
	if next != nil && next(vs) == nvml.SUCCESS {
		return
	}
	for i := range vs {
		vs[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
	}
}

// fieldCounters are the counters by NVML field id.
var fieldCounters = func() map[uint32]gpu.Counter {
	m := map[uint32]gpu.Counter{}
	for _, c := range gpu.AllCounters {
		id, _ := nvmlgpu.CounterField(c)
		m[id] = c
	}
	return m
}()

// putCounter answers field v with counter k, in the value type a driver
// uses: unsigned int for the remapped rows, unsigned long long otherwise.
func putCounter(v *nvml.FieldValue, k gpu.Counter, c Counters, links bool) {
	n, ret := c.value(k, links)
	v.NvmlReturn = uint32(ret)
	if ret != nvml.SUCCESS {
		return
	}
	if k == gpu.RemappedCorrect || k == gpu.RemappedUncorrect {
		v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
		binary.NativeEndian.PutUint32(v.Value[:4], uint32(n))
		return
	}
	v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
	binary.NativeEndian.PutUint64(v.Value[:], n)
}

// value is counter k as c says, or its default (see Counters); links says
// the GPU has NVLinks.
func (c Counters) value(k gpu.Counter, links bool) (uint64, nvml.Return) {
	if slices.Contains(c.Unsupported, k) {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	if !links && isNVLinkCounter(k) {
		if _, set := c.Values[k]; !set {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
	}
	v, ok := c.Values[k]
	if !ok && k == gpu.EnergyMJ {
		v = DefaultEnergyMJ
	}
	if r := c.Rates[k]; r > 0 && !c.Since.IsZero() {
		v += uint64(r * time.Since(c.Since).Seconds())
	}
	return v, nvml.SUCCESS
}

func isNVLinkCounter(k gpu.Counter) bool {
	return k == gpu.NVLinkCRCFlit || k == gpu.NVLinkCRCData || k == gpu.NVLinkReplays || k == gpu.NVLinkRecoveries
}

// hasNVLinks says d answers for its NVLink 0 (nvmlDeviceGetNvLinkState, as
// completeLinks lays the links out): a GPU without links answers
// NOT_SUPPORTED.
func hasNVLinks(d *server.Device) bool {
	if d.GetNvLinkStateFunc == nil {
		return false
	}
	_, ret := d.GetNvLinkStateFunc(0)
	return ret != nvml.ERROR_NOT_SUPPORTED
}
