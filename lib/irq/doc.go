// Package irq reads and places device interrupts: which IRQs a GPU or an
// HCA raises, where the kernel may deliver each one, and where gpuprep
// wants it while jobs run (issue 23, part 2).
//
// It is built in three layers, each usable alone:
//
//   - Readers, one per kernel file, each with a pure parser under it:
//     /proc/interrupts (ReadInterrupts, ParseInterrupts),
//     /proc/irq/<n>/smp_affinity_list and effective_affinity_list
//     (ReadAffinity), /sys/bus/pci/devices/<bdf>/msi_irqs/, irq,
//     numa_node and local_cpulist (ReadDevice). Every path goes through a
//     host.Root, so they run on fixture trees. Garbage is an error naming
//     the file and, for /proc/interrupts, the line.
//   - A planner, Place, with no I/O: devices, housekeeping CPUs, the
//     job's CPUs and every IRQ's current affinity in; the desired affinity
//     of each IRQ a rule applies to, and what was skipped and why, out.
//   - Apply (SetAffinity, Setter) writes one IRQ's smp_affinity_list and
//     reads it back; the irqbalance helpers find a running irqbalance and
//     write the --policyscript that keeps it off the IRQs gpuprep placed.
//
// # The placement rule
//
// A device IRQ (an IRQ a GPU or an HCA raises: its msi_irqs/, else its
// legacy irq line) is served by CPUs of the device's own NUMA node: the
// node's CPUs intersected with the housekeeping CPUs when housekeeping
// CPUs are set and the intersection is not empty, else all of the node's
// CPUs (which may include the job's: an interrupt of the job's own GPU
// on the job's node is what the job wants).
//
// With housekeeping CPUs set, every other IRQ whose current affinity
// overlaps the job's CPUs goes to the housekeeping CPUs, and every other
// movable IRQ already off them is placed where it is (To = From): where
// irqbalance runs it bans what gpuprep placed, and would otherwise move
// such an IRQ onto the job's CPUs at its next rescan (seen on the VM with
// irqbalance 1.9.2). Without housekeeping CPUs, other IRQs are left alone.
//
// A device IRQ that cannot be placed by node (the device has no NUMA node,
// numa_node -1 as in most VMs; or the IRQ is shared by devices of different
// nodes) is treated as an other IRQ, and skipped, with the reason, when
// that rule does not move it either. An IRQ whose smp_affinity_list is
// read-only (Linux 6.12 and later show managed and per-CPU interrupts so)
// is skipped: the kernel chooses its CPUs. So is a device IRQ that is not
// in use (no /proc/irq/<n>/ entry among the IRQs given).
//
// Which IRQs the kernel refuses to move is only certain by trying: a write
// to smp_affinity_list of a managed or per-CPU IRQ fails with EIO (EPERM
// from Linux 6.12 on). Apply counts such a refusal (Result.Refused) and
// never reports it as an error.
package irq
