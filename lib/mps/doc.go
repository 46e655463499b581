// Package mps runs one NVIDIA MPS control daemon per (job user, GPU set)
// under /run/gpuprep/mps (issue 23). It is the groundwork only: the prolog,
// epilog and srunwrap call it; nothing here keeps counts or reads a job.
//
// What it relies on, from NVIDIA's MPS documentation
// (docs.nvidia.com/deploy/mps: "Appendix: Tools and Interface Reference",
// "Appendix: Environment Variables", "Appendix: Logging"):
//
//   - `nvidia-cuda-mps-control -d` starts the control daemon in the
//     background; the same program without -d, fed commands on stdin,
//     talks to it: get_server_list prints the PIDs of its MPS servers,
//     quit stops the daemon and its servers.
//   - The daemon, its servers and their clients meet in
//     CUDA_MPS_PIPE_DIRECTORY (named pipes and UNIX sockets; default
//     /tmp/nvidia-mps), where the daemon also writes
//     nvidia-cuda-mps-control.pid. Its logs, control.log and server.log,
//     go to CUDA_MPS_LOG_DIRECTORY (default /var/log/nvidia-mps), which
//     the servers inherit from the daemon.
//   - CUDA_VISIBLE_DEVICES in the daemon's environment chooses the GPUs
//     it serves (UUIDs recommended); clients see them renumbered from 0.
//   - A daemon started by root starts each server as the UID of the
//     client asking; a server serves one user at a time.
//
// Seen on an H200 with driver 580.159 (control binary version 13000):
// the daemon makes every file of the pipe directory (control and
// control_privileged sockets, control_lock, a FIFO named log, the pid
// file) and of the log directory (server.log too: servers log through
// it) as root when it starts, and none later; a user's client needs only
// to reach the pipe directory, whose control socket is 0666; a server's
// argv[0] ends in nvidia-cuda-mps-server and its environment is the
// daemon's; plain quit waits for attached clients (and their server),
// while "quit -t N" gives up after N seconds; the client program prints
// "Cannot find MPS control daemon process" and exits 1 when no daemon
// listens. Hence Create makes both directories root's, Start hands only
// the pipe directory to the job's user once the daemon runs (Grant), and
// Quit does not rely on quit alone.
//
// Files: dirs.go (Key, Dirs), fsdirs.go (Create, Grant, OpenBase),
// remove.go (Remove; the flat removal is lib/dirfd's), find.go
// (Find), control.go (Control, Exec: Start, Servers, Alive), proc.go (the
// daemon and its servers in /proc), quit.go (Exec.Quit), mode.go (Refuse).
package mps
