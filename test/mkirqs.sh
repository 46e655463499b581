#!/usr/bin/env bash
# mkirqs.sh ROOT [VECTORS] [OTHERS]: gives a fixture root (a capture, which
# has no interrupts) the interrupts of a node, as the kernel shows them:
# VECTORS MSI-X vectors (2) for each NVIDIA GPU and Mellanox NIC or HCA under
# ROOT/sys/bus/pci/devices (msi_irqs/, numbered from 100), OTHERS other
# movable IRQs (a serial port, 4, and NIC queues from 30; 2 in all) and an
# NVMe queue (40) the kernel manages (read-only smp_affinity_list, as Linux
# 6.12 and later show it), each on every online CPU, with /proc/interrupts
# rows for every online CPU. For make demo and the irq_affinity benchmark.
set -euo pipefail
root=${1:?usage: mkirqs.sh ROOT [VECTORS] [OTHERS]}
vectors=${2:-2}
others=${3:-2}
irqs=(4)
for ((i = 1; i < others; i++)); do
  q=$((29 + i))
  ((q < 40)) || q=$((q + 1)) # 40 is the NVMe queue's
  irqs+=("$q")
done
irqs+=(40)
n=$((others + 30 < 100 ? 100 : others + 31)) # the devices' vectors after the others
for d in "$root"/sys/bus/pci/devices/*; do
  v=$(cat "$d/vendor") c=$(cat "$d/class")
  case "$v:$c" in 0x10de:0x0302* | 0x15b3:0x02*) ;; *) continue ;; esac
  mkdir -p "$d/msi_irqs"
  for ((i = 0; i < vectors; i++)); do echo msix >"$d/msi_irqs/$n"; irqs+=("$n"); n=$((n + 1)); done
done
cpus=$(cat "$root/sys/devices/system/cpu/online")
last=${cpus##*[-,]}
zeros=$(printf ' %10d' $(seq 0 "$last") | sed 's/[0-9]\+/0/g')
{
  printf '     '; printf ' %10s' $(seq -f 'CPU%g' 0 "$last"); echo
  for i in "${irqs[@]}"; do printf '%4d:%s  IR-PCI-MSIX  %d-edge  irq%d\n' "$i" "$zeros" "$i" "$i"; done
} >"$root/proc/interrupts"
for i in "${irqs[@]}"; do
  mkdir -p "$root/proc/irq/$i"
  echo "$cpus" >"$root/proc/irq/$i/smp_affinity_list"
done
chmod 0444 "$root/proc/irq/40/smp_affinity_list"
