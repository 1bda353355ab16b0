/* shim_lcore.c: launch units on worker lcores, the stop flag, join. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <rte_launch.h>
#include <rte_lcore.h>

#include "shim_internal.h"

/* EAL owns lcores; these mirror them (one job per lcore). */
static struct rig_job rig_jobs[RTE_MAX_LCORE];

int rig_stop_flag;

static int rig_lcore_main(void *arg)
{
	struct rig_job *j = arg;
	int n = j->n;
	struct rig_unit **units = j->units;
	int all_fwd = 1;

	j->tid = (int)syscall(SYS_gettid);
	for (int i = 0; i < n; i++) {
		if (units[i]->kind == RIG_FWD && units[i]->txfirst)
			rig_fwd_txfirst(units[i]);
		all_fwd &= units[i]->kind == RIG_FWD;
	}
	if (all_fwd) {
		rig_fwd_loop(j);
		return 0;
	}
	while (!rig_stopping()) {
		for (int i = 0; i < n; i++) {
			struct rig_unit *u = units[i];
			switch (u->kind) {
			case RIG_GEN: rig_gen_step(u); break;
			case RIG_RX: rig_rx_step(u); break;
			case RIG_FWD: rig_fwd_step(u); break;
			}
		}
	}
	return 0;
}

int rig_launch(unsigned lcore, struct rig_unit **units, int n)
{
	struct rig_job *j;
	if (lcore >= RTE_MAX_LCORE || n > RIG_MAX_UNITS)
		return -EINVAL;
	j = &rig_jobs[lcore];
	memset(j, 0, sizeof(*j));
	j->n = n;
	memcpy(j->units, units, sizeof(*units) * n);
	SET_FLAG(rig_stop_flag, 0);
	return rte_eal_remote_launch(rig_lcore_main, j, lcore);
}

void rig_stop(void) { SET_FLAG(rig_stop_flag, 1); }

int rig_wait_all(void)
{
	rte_eal_mp_wait_lcore();
	return 0;
}

int rig_worker_tid(unsigned lcore)
{
	return lcore < RTE_MAX_LCORE ? rig_jobs[lcore].tid : 0;
}
