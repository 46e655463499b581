// Package nccl plans the NCCL variables srunwrap gives each rank (per
// fabric, from [[nccl.fabric]], and NCCL_IB_HCA from the HCAs nearest the
// rank's GPU) and checks, inside the task's own mount namespace, what
// NCCL will find there: NCCL_TOPO_FILE, the HCAs NCCL_IB_HCA names,
// RLIMIT_MEMLOCK, and inherited variables that cost bandwidth.
//
// Plan is pure. Check reads only through a host.Root and the environment
// it is given, so both run on fixture trees.
package nccl
