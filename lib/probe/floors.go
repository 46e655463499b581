package probe

import "strings"

// Floors are the lowest values one GPU may measure before its verdict
// fails; a zero floor is not judged.
type Floors struct {
	H2DGBps float64 `json:"h2d_gbps,omitempty"`
	D2HGBps float64 `json:"d2h_gbps,omitempty"`
	HBMGBps float64 `json:"hbm_gbps,omitempty"`
	P2PGBps float64 `json:"p2p_gbps,omitempty"`
	// TFLOPS is the compute floor in FP32 TFLOP/s (a GPU held at low
	// clocks); ComputeRatio the lowest ratio to the peak at the clock it
	// ran at (a GPU whose SMs do less than their clock allows).
	TFLOPS       float64 `json:"tflops,omitempty"`
	ComputeRatio float64 `json:"compute_ratio,omitempty"`
}

// ModelFloors is what a site sets for one GPU model (the health model
// file): what the model is built for, and floors that replace the ones
// made from it. Zero is not set.
type ModelFloors struct {
	HBMGBps    float64 // the memory's bandwidth as built (H100 SXM: 3350)
	NVLinkGBps float64 // one NVLink's bandwidth, one way
	MinH2DGBps float64 // applies to both directions
	MinHBMGBps float64
	MinP2PGBps float64
	MinTFLOPS  float64
}

// Policy is how floors are made: Fraction of what the hardware is built
// for (the PCIe link's rate, the memory's and NVLinks' bandwidth, the FP32
// peak at the highest clock), ComputeRatio of the peak at the clock the
// kernel ran at.
type Policy struct {
	Fraction     float64
	ComputeRatio float64
}

// builtHBM is the memory bandwidth of GPU models as NVIDIA's data sheets
// give it, GB/s, by NVML's product name; a model not listed has no HBM
// floor unless the model file gives one (read 2026-12-05).
var builtHBM = map[string]float64{
	"NVIDIA A100-SXM4-40GB":          1555,
	"NVIDIA A100-SXM4-80GB":          2039,
	"NVIDIA A100 80GB PCIe":          1935,
	"NVIDIA H100 80GB HBM3":          3350,
	"NVIDIA H100 PCIe":               2000,
	"NVIDIA H100 NVL":                3900,
	"NVIDIA H200":                    4800,
	"NVIDIA H200 NVL":                4800,
	"NVIDIA GH200 480GB":             4000,
	"NVIDIA B200":                    8000,
	"NVIDIA H800":                    3350,
	"NVIDIA H20":                     4000,
	"NVIDIA GB200":                   8000,
	"NVIDIA RTX 6000 Ada Generation": 960,
	"NVIDIA L40S":                    864,
}

// builtHBMOf is the memory bandwidth of a GPU model by its NVML name: the
// table's entry of that name, else of the longest name it starts with
// ("NVIDIA B200 180GB HBM3e" is a "NVIDIA B200"); 0 when none.
func builtHBMOf(name string) float64 {
	if v, ok := builtHBM[name]; ok {
		return v
	}
	best, v := 0, 0.0
	for k, bw := range builtHBM {
		if len(k) > best && strings.HasPrefix(name, k+" ") {
			best, v = len(k), bw
		}
	}
	return v
}

// nvlinkGBps is one NVLink's bandwidth one way by compute capability's
// major version: NVLink 3 (Ampere, 8.x) and 4 (Hopper, 9.x) 25 GB/s,
// NVLink 5 (Blackwell, 10.x) 50 GB/s.
func nvlinkGBps(ccMajor int) float64 {
	switch ccMajor {
	case 8, 9:
		return 25
	case 10:
		return 50
	}
	return 0
}

// pcieLaneGBps is one PCIe lane's data rate one way, GB/s, by generation:
// the transfer rate less the line code (8b/10b to gen 2, 128b/130b from
// gen 3; gen 6's FLIT mode taken as 242/256).
func pcieLaneGBps(gen int) float64 {
	switch gen {
	case 1:
		return 2.5 * 8 / 10 / 8
	case 2:
		return 5.0 * 8 / 10 / 8
	case 3:
		return 8.0 * 128 / 130 / 8
	case 4:
		return 16.0 * 128 / 130 / 8
	case 5:
		return 32.0 * 128 / 130 / 8
	case 6:
		return 64.0 * 242 / 256 / 8
	}
	return 0
}

// FloorsFor makes one GPU's floors from what its result says of it (its
// link, NVLinks, compute shape), the model's settings and the policy.
func FloorsFor(g GPUResult, m ModelFloors, p Policy) Floors {
	f := Floors{ComputeRatio: p.ComputeRatio}
	link := pcieLaneGBps(g.LinkGen) * float64(g.LinkWidth)
	f.H2DGBps = pick(m.MinH2DGBps, p.Fraction*link)
	f.D2HGBps = f.H2DGBps
	hbm := m.HBMGBps
	if hbm == 0 {
		hbm = builtHBMOf(g.Name)
	}
	f.HBMGBps = pick(m.MinHBMGBps, p.Fraction*hbm)
	perLink := m.NVLinkGBps
	if perLink == 0 {
		perLink = nvlinkGBps(g.Compute.CCMajor)
	}
	f.P2PGBps = pick(m.MinP2PGBps, p.Fraction*perLink*float64(g.NVLinks))
	f.TFLOPS = pick(m.MinTFLOPS, p.Fraction*g.Compute.PeakMaxClock)
	return f
}

// pick is the site's floor when set, else the one made.
func pick(set, made float64) float64 {
	if set > 0 {
		return set
	}
	return made
}
