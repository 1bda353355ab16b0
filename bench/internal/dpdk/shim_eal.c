/* shim_eal.c: EAL start and cleanup, the mbuf pool, lcores and TSC. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include <rte_eal.h>
#include <rte_log.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_cycles.h>

#include "shim_internal.h"

int rig_eal_init(int argc, char **argv)
{
	int r;
	sigset_t all, old;
	/* EAL's console log goes to stdout; keep stdout for results (-o json). */
	rte_openlog_stream(stderr);
	/* EAL threads (lcores, interrupt, control) inherit this mask: keep
	 * process signals (SIGINT, SIGTERM...) on Go's threads only. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = rte_eal_init(argc, argv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		return -rte_errno;
	return r;
}

int rig_eal_cleanup(void) { return rte_eal_cleanup(); }
const char *rig_eal_runtime_dir(void) { return rte_eal_get_runtime_dir(); }
const char *rig_strerror(int err) { return rte_strerror(err); }
int rig_errno(void) { return rte_errno; }

void *rig_mempool_create(const char *name, uint32_t n, uint32_t cache, uint32_t data_room)
{
	return rte_pktmbuf_pool_create(name, n, cache, 0, data_room, rte_socket_id());
}

void rig_mempool_free(void *mp) { rte_mempool_free(mp); }

uint64_t rig_tsc_hz(void) { return rte_get_tsc_hz(); }
uint64_t rig_rdtsc(void) { return rte_rdtsc(); }
unsigned rig_main_lcore(void) { return rte_get_main_lcore(); }
int rig_next_lcore(int prev)
{
	unsigned l = rte_get_next_lcore(prev < 0 ? (unsigned)-1 : (unsigned)prev, 1, 0);
	return l >= RTE_MAX_LCORE ? -1 : (int)l;
}
int rig_lcore_cpu(unsigned lcore)
{
	return rte_lcore_to_cpu_id((int)lcore);
}
int rig_thread_register(void) { return rte_thread_register(); }
