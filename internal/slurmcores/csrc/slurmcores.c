/*
 * slurmcores: numbers the CPU cores of the topology hwloc loads (the real
 * node, or the fixture root named by HWLOC_FSROOT, which hwloc's Linux
 * backend reads itself) the way Slurm 22.05.8's slurmd does for gres.conf
 * Cores= ("abstract" core ids, src/slurmd/common/xcpuinfo.c:
 * xcpuinfo_hwloc_topo_load and xcpuinfo_hwloc_topo_get), with no
 * slurm.conf options (no l3cache_as_socket, no numa_node_as_socket).
 *
 * Output, on stdout:
 *   counts cpus=N boards=B sockets=S cores_per_socket=C threads_per_core=T
 *   core <abstract id> socket <slurm socket index> pus <list> mapped <list>
 * one core line per abstract core, in abstract order. pus lists the OS
 * indexes of all PUs of the hwloc core; mapped lists the OS indexes Slurm's
 * block map gives the core's abstract CPUs (core*T+thread): only the first T
 * PUs of a core, and only ids below N. A list is comma-separated, "-" when
 * empty. Failure: a message on stderr, exit status 1.
 */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *msg)
{
	fprintf(stderr, "slurmcores: %s\n", msg);
	exit(1);
}

/* Cores at or below obj (Slurm counts them through the children arrays). */
static int core_count(hwloc_obj_t obj)
{
	unsigned i;
	int n = 0;

	if (obj->type == HWLOC_OBJ_CORE)
		return 1;
	for (i = 0; i < obj->arity; i++)
		n += core_count(obj->children[i]);
	return n;
}

static int linux_backend(hwloc_obj_t root)
{
	unsigned i;

	for (i = 0; i < root->infos_count; i++)
		if (!strcmp(root->infos[i].name, "Backend") &&
		    !strcmp(root->infos[i].value, "Linux"))
			return 1;
	return 0;
}

static void print_list(const char *name, const int *ids, int n)
{
	int i;

	printf(" %s ", name);
	if (n == 0)
		fputs("-", stdout);
	for (i = 0; i < n; i++)
		printf(i ? ",%d" : "%d", ids[i]);
}

int main(void)
{
	hwloc_topology_t topo;
	hwloc_obj_type_t types[3] = {HWLOC_OBJ_PACKAGE, HWLOC_OBJ_CORE,
				     HWLOC_OBJ_PU};
	hwloc_obj_t obj;
	int cpus, boards = 1, sockets = 0, cores, threads, per_socket;
	int nsock, depth, i, abs_core = -1, slurm_sock = -1;
	int *sock_cores, *pus, *mapped;

	if (hwloc_topology_init(&topo))
		die("hwloc_topology_init failed");
	/* Slurm's "full" load: the whole system, no L1/L2/L4/L5 caches, no
	 * Misc objects. L3 caches stay (l3cache_as_socket needs them). */
	if (hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED))
		die("hwloc_topology_set_flags failed");
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_L1CACHE, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_L2CACHE, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_L4CACHE, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_L5CACHE, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE);
	if (hwloc_topology_load(topo))
		die("hwloc_topology_load failed");
	/* When the Linux backend cannot read HWLOC_FSROOT, hwloc falls back to
	 * another backend, which describes this machine: refuse that. */
	if (getenv("HWLOC_FSROOT") && !linux_backend(hwloc_get_root_obj(topo)))
		die("hwloc's Linux backend did not read HWLOC_FSROOT (no sysfs CPU topology there?)");

	/* A Group as the root's first child: its level counts the boards. */
	obj = hwloc_get_next_child(topo, hwloc_get_root_obj(topo), NULL);
	if (obj && obj->type == HWLOC_OBJ_GROUP) {
		boards = hwloc_get_nbobjs_by_depth(topo, obj->depth);
		if (boards < 1)
			boards = 1;
	}

	/* Sockets are packages holding at least one core. */
	depth = hwloc_get_type_depth(topo, HWLOC_OBJ_PACKAGE);
	nsock = depth < 0 ? 0 : (int)hwloc_get_nbobjs_by_depth(topo, depth);
	sock_cores = calloc(nsock + 1, sizeof(int));
	if (!sock_cores)
		die("out of memory");
	for (i = 0; i < nsock; i++) {
		sock_cores[i] = core_count(hwloc_get_obj_by_depth(topo, depth, i));
		if (sock_cores[i] > 0)
			sockets++;
	}
	cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
	/* Slurm's fallbacks when hwloc reports no sockets or no cores. */
	if (sockets == 0) {
		sockets = nsock > 0 ? nsock : 1;
		for (i = 0; i < nsock; i++)
			sock_cores[i] = 0;
	}
	if (cores <= 0)
		cores = 1;
	cpus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
	threads = cpus / cores;
	per_socket = cores / sockets;
	printf("counts cpus=%d boards=%d sockets=%d cores_per_socket=%d threads_per_core=%d\n",
	       cpus, boards, sockets, per_socket, threads);

	pus = calloc(cpus + 1, sizeof(int));
	mapped = calloc(cpus + 1, sizeof(int));
	if (!pus || !mapped)
		die("out of memory");
	/* Packages by logical index, skipping those without cores; below each,
	 * its cores in logical order; the abstract core id is the running
	 * count. Slurm stops once it has walked `sockets` packages. */
	for (i = 0; i < nsock && slurm_sock + 1 < sockets; i++) {
		unsigned idx[3];
		int c;

		if (sock_cores[i] == 0)
			continue;
		slurm_sock++;
		idx[0] = i;
		for (c = 0; c < sock_cores[i]; c++) {
			int t, npus = 0, nmapped = 0;

			abs_core++;
			idx[1] = c;
			for (t = 0;; t++) {
				int absid = abs_core * threads + t;

				idx[2] = t;
				obj = hwloc_get_obj_below_array_by_type(topo, 3, types, idx);
				if (!obj)
					break;
				if (npus < cpus)
					pus[npus++] = obj->os_index;
				if (t < threads && (int)obj->os_index < cpus &&
				    absid < cpus && nmapped < cpus)
					mapped[nmapped++] = obj->os_index;
			}
			printf("core %d socket %d", abs_core, slurm_sock);
			print_list("pus", pus, npus);
			print_list("mapped", mapped, nmapped);
			putchar('\n');
		}
	}
	if (abs_core < 0 && cpus > 0) {
		/* No package with cores: Slurm's block map stays the identity,
		 * so abstract core c is CPUs c*T .. c*T+T-1. */
		int c, t;

		for (c = 0; threads > 0 && c < cpus / threads; c++) {
			int n = 0;

			for (t = 0; t < threads; t++) {
				obj = hwloc_get_pu_obj_by_os_index(topo, c * threads + t);
				if (obj)
					pus[n++] = obj->os_index;
			}
			printf("core %d socket 0", c);
			print_list("pus", pus, n);
			print_list("mapped", pus, n);
			putchar('\n');
		}
	}
	hwloc_topology_destroy(topo);
	if (fflush(stdout) || ferror(stdout))
		die("write error");
	return 0;
}
