package irq

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"gpuprep/lib/cpuset"
	"gpuprep/lib/host"
)

// readInput reads the fixture the way the integrator will: the rows of
// /proc/interrupts, their affinities, and the GPUs' and HCAs' devices.
func readInput(t *testing.T, r host.Root, busIDs ...string) Input {
	t.Helper()
	in, err := ReadInterrupts(r)
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, i := range in.IRQs {
		nums = append(nums, i.IRQ)
	}
	affs, gone, err := ReadAffinities(r, nums)
	if err != nil || len(gone) > 0 {
		t.Fatalf("ReadAffinities: %v, gone %v", err, gone)
	}
	var devs []DeviceIRQs
	for _, id := range busIDs {
		d, err := ReadDevice(r, id)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, DeviceIRQs{BusID: d.BusID, IRQs: d.IRQs(), NUMANode: d.NUMANode, NodeCPUs: d.LocalCPUs})
	}
	return Input{Devices: devs, IRQs: affs}
}

// planText is a plan, one line per IRQ: "60 0-15>0-1 dev" for a placement,
// "70 skip: reason" for a skip.
func planText(p Plan) string {
	var lines []string
	for _, pl := range p.Placements {
		lines = append(lines, fmt.Sprintf("%d %s>%s %s", pl.IRQ, pl.From, pl.To, pl.Device))
	}
	for _, s := range p.Skipped {
		lines = append(lines, fmt.Sprintf("%d skip %s: %s", s.IRQ, s.Device, s.Reason))
	}
	return strings.Join(lines, "\n")
}

// TestPlaceTwoSocket: the job runs on NUMA node 1 (CPUs 8-15, GPU 1 and
// HCA 1); the GPUs' and HCAs' IRQs go to their nodes, with housekeeping
// CPUs to the node's housekeeping CPUs, and then every other IRQ on the
// job's CPUs goes to the housekeeping CPUs. The NVMe drive is no GPU or
// HCA: its queues are other IRQs; the read-only one stays.
func TestPlaceTwoSocket(t *testing.T) {
	r := twoSocket(t).finish()
	base := readInput(t, r, gpu0, hca0, gpu1, hca1)
	base.JobCPUs = cpuset.MustParse("8-15")

	withHK := base
	withHK.Housekeeping = cpuset.MustParse("0-1,8-9")
	p := Place(withHK)
	want := []string{
		"0 0-15>0-1,8-9 ",
		"9 0-15>0-1,8-9 ",
		"16 0-15>0-1,8-9 ", // the GPU's INTx line, unused by it: an other IRQ
		"26 12>0-1,8-9 ",
		"31 6-10>0-1,8-9 ", // a managed queue the kernel will refuse (old kernel)
		"32 11-15>0-1,8-9 ",
		"40 0-15>0-1 " + hca0, "41 0-15>0-1 " + hca0, "42 0-15>0-1 " + hca0, "43 0-15>0-1 " + hca0, "44 0-15>0-1 " + hca0,
		"50 0-15>8-9 " + hca1, "51 0-15>8-9 " + hca1, "52 0-15>8-9 " + hca1, "53 0-15>8-9 " + hca1, "54 0-15>8-9 " + hca1,
		"60 0-15>0-1 " + gpu0,
		"61 0-15>8-9 " + gpu1, // on the job's node
		"70 skip " + gpu0 + ": not in use (no /proc/irq/70/ among the IRQs read)",
	}
	if got := planText(p); got != strings.Join(want, "\n") {
		t.Errorf("with housekeeping:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if len(p.Changes()) != 18 {
		t.Errorf("%d changes", len(p.Changes()))
	}
	// IRQ 30 (read-only, 0-5) is on no job CPU: in no list.
	for _, pl := range p.Placements {
		if pl.IRQ == 30 {
			t.Errorf("IRQ 30 placed: %+v", pl)
		}
	}
	if pl := p.Placements[len(p.Placements)-1]; pl.Reason != "device "+gpu1+" on NUMA node 1 (its housekeeping CPUs)" {
		t.Errorf("reason %q", pl.Reason)
	}
	if pl := p.Placements[0]; pl.Reason != "on the job's CPUs 8-15: to the housekeeping CPUs" {
		t.Errorf("reason %q", pl.Reason)
	}

	// Without housekeeping CPUs only the devices' IRQs move, each to its
	// whole node, the job's own included.
	p = Place(base)
	want = []string{
		"40 0-15>0-7 " + hca0, "41 0-15>0-7 " + hca0, "42 0-15>0-7 " + hca0, "43 0-15>0-7 " + hca0, "44 0-15>0-7 " + hca0,
		"50 0-15>8-15 " + hca1, "51 0-15>8-15 " + hca1, "52 0-15>8-15 " + hca1, "53 0-15>8-15 " + hca1, "54 0-15>8-15 " + hca1,
		"60 0-15>0-7 " + gpu0,
		"61 0-15>8-15 " + gpu1,
		"70 skip " + gpu0 + ": not in use (no /proc/irq/70/ among the IRQs read)",
	}
	if got := planText(p); got != strings.Join(want, "\n") {
		t.Errorf("without housekeeping:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

// TestPlaceRules covers one rule at a time on small inputs.
func TestPlaceRules(t *testing.T) {
	aff := func(irq int, cpus string) Affinity { return Affinity{IRQ: irq, CPUs: cpuset.MustParse(cpus)} }
	node0 := DeviceIRQs{BusID: gpu0, IRQs: []int{60}, NUMANode: 0, NodeCPUs: cpuset.MustParse("0-7")}
	node1 := DeviceIRQs{BusID: gpu1, IRQs: []int{61}, NUMANode: 1, NodeCPUs: cpuset.MustParse("8-15")}
	vm := DeviceIRQs{BusID: "0000:00:04.0", IRQs: []int{11}, NUMANode: -1, NodeCPUs: cpuset.MustParse("0-15")}
	for _, tc := range []struct {
		name     string
		in       Input
		want     string
		wantWhy  string // the first entry's reason, when set
		unchange int    // placements that change nothing
	}{
		{
			name: "no NUMA node, no housekeeping: skipped",
			in:   Input{Devices: []DeviceIRQs{vm}, JobCPUs: cpuset.MustParse("8-15"), IRQs: []Affinity{aff(11, "0-15")}},
			want: "11 skip 0000:00:04.0: device 0000:00:04.0 has no NUMA node; no housekeeping CPUs to move it to",
		},
		{
			name:    "no NUMA node, housekeeping, on the job's CPUs: to the housekeeping CPUs",
			in:      Input{Devices: []DeviceIRQs{vm}, Housekeeping: cpuset.MustParse("0"), JobCPUs: cpuset.MustParse("8-15"), IRQs: []Affinity{aff(11, "0-15")}},
			want:    "11 0-15>0 0000:00:04.0",
			wantWhy: "device 0000:00:04.0 has no NUMA node; on the job's CPUs 8-15: to the housekeeping CPUs",
		},
		{
			name:     "no NUMA node, housekeeping, off the job's CPUs: kept where it is, placed",
			in:       Input{Devices: []DeviceIRQs{vm}, Housekeeping: cpuset.MustParse("0"), JobCPUs: cpuset.MustParse("8-15"), IRQs: []Affinity{aff(11, "2")}},
			want:     "11 2>2 0000:00:04.0",
			wantWhy:  "device 0000:00:04.0 has no NUMA node; off the job's CPUs already: kept on 2",
			unchange: 1,
		},
		{
			// irqbalance bans what is placed: unplaced, it would move this
			// IRQ onto the job's CPUs at the rescan the prolog asks for.
			name:     "other IRQ already on the housekeeping CPUs: kept, placed",
			in:       Input{Housekeeping: cpuset.MustParse("0"), JobCPUs: cpuset.MustParse("8-15"), IRQs: []Affinity{aff(31, "0"), aff(32, "9")}},
			want:     "31 0>0 \n32 9>0 ",
			wantWhy:  "off the job's CPUs already: kept on 0",
			unchange: 1,
		},
		{
			name: "no NUMA node, housekeeping, off the job's CPUs, read-only: skipped",
			in: Input{Devices: []DeviceIRQs{vm}, Housekeeping: cpuset.MustParse("0"), JobCPUs: cpuset.MustParse("8-15"),
				IRQs: []Affinity{{IRQ: 11, CPUs: cpuset.MustParse("2"), ReadOnly: true}}},
			want: "11 skip 0000:00:04.0: " + readOnlyReason,
		},
		{
			name: "numa_node set but no CPUs known: as no node",
			in: Input{Devices: []DeviceIRQs{{BusID: gpu0, IRQs: []int{60}, NUMANode: 0}},
				IRQs: []Affinity{aff(60, "0-15")}},
			want: "60 skip " + gpu0 + ": device " + gpu0 + " has no NUMA node; no housekeeping CPUs to move it to",
		},
		{
			name:    "housekeeping only on the other node: the whole node",
			in:      Input{Devices: []DeviceIRQs{node1}, Housekeeping: cpuset.MustParse("0-1"), JobCPUs: cpuset.MustParse("8-15"), IRQs: []Affinity{aff(61, "3")}},
			want:    "61 3>8-15 " + gpu1,
			wantWhy: "device " + gpu1 + " on NUMA node 1 (no housekeeping CPU on it)",
		},
		{
			name:     "already in place",
			in:       Input{Devices: []DeviceIRQs{node0}, IRQs: []Affinity{aff(60, "0-7")}},
			want:     "60 0-7>0-7 " + gpu0,
			unchange: 1,
		},
		{
			name: "one line shared by devices of two nodes",
			in: Input{Devices: []DeviceIRQs{{BusID: gpu0, IRQs: []int{16}, NUMANode: 0, NodeCPUs: cpuset.MustParse("0-7")},
				{BusID: gpu1, IRQs: []int{16}, NUMANode: 1, NodeCPUs: cpuset.MustParse("8-15")}},
				IRQs: []Affinity{aff(16, "0-15")}},
			want: "16 skip " + gpu0 + "," + gpu1 + ": shared by devices on NUMA nodes 0 and 1; no housekeeping CPUs to move it to",
		},
		{
			name: "one line shared by devices of one node",
			in: Input{Devices: []DeviceIRQs{{BusID: hca0, IRQs: []int{16}, NUMANode: 0, NodeCPUs: cpuset.MustParse("0-7")},
				{BusID: gpu0, IRQs: []int{16}, NUMANode: 0, NodeCPUs: cpuset.MustParse("0-7")}},
				IRQs: []Affinity{aff(16, "0-15")}},
			want:    "16 0-15>0-7 " + gpu0 + "," + hca0,
			wantWhy: "device " + gpu0 + "," + hca0 + " on NUMA node 0",
		},
		{
			name: "read-only device IRQ",
			in:   Input{Devices: []DeviceIRQs{node0}, IRQs: []Affinity{{IRQ: 60, CPUs: cpuset.MustParse("0-15"), ReadOnly: true}}},
			want: "60 skip " + gpu0 + ": " + readOnlyReason,
		},
		{
			name: "read-only other IRQ on the job's CPUs",
			in:   Input{Housekeeping: cpuset.MustParse("0"), JobCPUs: cpuset.MustParse("8-15"), IRQs: []Affinity{{IRQ: 30, CPUs: cpuset.MustParse("8"), ReadOnly: true}}},
			want: "30 skip : " + readOnlyReason,
		},
		{
			name: "other IRQs off the job's CPUs or with no job CPUs stay",
			in:   Input{Housekeeping: cpuset.MustParse("0"), IRQs: []Affinity{aff(5, "0-15"), aff(6, "3")}},
			want: "",
		},
		{
			name: "an IRQ given twice counts once",
			in:   Input{Housekeeping: cpuset.MustParse("0"), JobCPUs: cpuset.MustParse("4"), IRQs: []Affinity{aff(5, "1"), aff(5, "4")}},
			want: "5 4>0 ",
		},
	} {
		p := Place(tc.in)
		if got := planText(p); got != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, got, tc.want)
			continue
		}
		if tc.wantWhy != "" && p.Placements[0].Reason != tc.wantWhy {
			t.Errorf("%s: reason %q; want %q", tc.name, p.Placements[0].Reason, tc.wantWhy)
		}
		if n := len(p.Placements) - len(p.Changes()); n != tc.unchange {
			t.Errorf("%s: %d placements change nothing", tc.name, n)
		}
	}
}

// Place reads nothing and changes nothing given: the same input gives the
// same plan, and the input's slices are left as they were.
func TestPlaceIsPure(t *testing.T) {
	r := twoSocket(t).finish()
	in := readInput(t, r, gpu1, gpu0, hca1, hca0)
	in.Housekeeping, in.JobCPUs = cpuset.MustParse("0,8"), cpuset.MustParse("4-7")
	before := fmt.Sprint(in)
	a, b := planText(Place(in)), planText(Place(in))
	if a != b || fmt.Sprint(in) != before {
		t.Errorf("Place is not pure:\n%s\n---\n%s", a, b)
	}
}

// TestPlaceCapturedVM plans the H200 VM captured in testdata (Linux 6.18,
// every IRQ on 0-15, the virtio disks' queues 31 and 33 managed and shown
// read-only, the GPU 0000:00:06.0 with numa_node -1): the GPU's IRQs
// cannot go by node, so with housekeeping CPUs they leave the job's CPUs
// like every other IRQ, and without them they stay, each skip saying why.
func TestPlaceCapturedVM(t *testing.T) {
	b, err := os.ReadFile("testdata/interrupts-h200-vm-6.18.txt")
	if err != nil {
		t.Fatal(err)
	}
	in, err := ParseInterrupts(b)
	if err != nil {
		t.Fatal(err)
	}
	var affs []Affinity
	for _, i := range in.IRQs {
		affs = append(affs, Affinity{IRQ: i.IRQ, CPUs: cpuset.MustParse("0-15"), ReadOnly: i.IRQ == 31 || i.IRQ == 33})
	}
	gpu := DeviceIRQs{BusID: "0000:00:06.0", IRQs: []int{42, 43, 44, 45, 46, 47, 48, 49}, NUMANode: -1, NodeCPUs: cpuset.MustParse("0-15")}
	p := Place(Input{Devices: []DeviceIRQs{gpu}, Housekeeping: cpuset.MustParse("0-1"), JobCPUs: cpuset.MustParse("2-15"), IRQs: affs})
	if len(p.Placements) != 22 || len(p.Skipped) != 2 || p.Skipped[0].IRQ != 31 || p.Skipped[1].IRQ != 33 {
		t.Fatalf("with housekeeping:\n%s", planText(p))
	}
	for _, pl := range p.Placements {
		if pl.To.String() != "0-1" || (pl.IRQ >= 42) != (pl.Device == gpu.BusID) {
			t.Errorf("%+v", pl)
		}
	}
	if why := p.Placements[len(p.Placements)-1].Reason; why != "device 0000:00:06.0 has no NUMA node; on the job's CPUs 2-15: to the housekeeping CPUs" {
		t.Errorf("reason %q", why)
	}
	p = Place(Input{Devices: []DeviceIRQs{gpu}, JobCPUs: cpuset.MustParse("2-15"), IRQs: affs})
	if len(p.Placements) != 0 || len(p.Skipped) != 8 || p.Skipped[0].Reason != "device 0000:00:06.0 has no NUMA node; no housekeeping CPUs to move it to" {
		t.Errorf("without housekeeping:\n%s", planText(p))
	}
}
