/* shim_eal.c: EAL start and cleanup, the mbuf pool, lcores and TSC, and
 * the log tee. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_log.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_cycles.h>

#include "shim_internal.h"

/* The log tee: EAL's log stream (one per process, EAL's own state) goes
 * to stderr and into this ring, so that Go can read what a PMD said about
 * a port that failed ("Too many memory regions", a memif disconnect
 * reason). Written by whichever thread logs, under the mutex. */
#define RIG_LOG_RING (64 * 1024)
static struct {
	pthread_mutex_t mu;
	char buf[RIG_LOG_RING];
	uint64_t total; /* bytes ever written */
} rig_log = { .mu = PTHREAD_MUTEX_INITIALIZER };

static ssize_t rig_log_write(void *cookie, const char *data, size_t n)
{
	(void)cookie;
	fwrite(data, 1, n, stderr);
	pthread_mutex_lock(&rig_log.mu);
	for (size_t i = 0; i < n; i++)
		rig_log.buf[(rig_log.total + i) % RIG_LOG_RING] = data[i];
	rig_log.total += n;
	pthread_mutex_unlock(&rig_log.mu);
	return (ssize_t)n;
}

static FILE *rig_log_stream(void)
{
	cookie_io_functions_t io = { .write = rig_log_write };
	FILE *f = fopencookie(NULL, "w", io);
	if (f == NULL)
		return stderr;
	setvbuf(f, NULL, _IOLBF, 0);
	return f;
}

uint64_t rig_log_mark(void)
{
	uint64_t t;
	pthread_mutex_lock(&rig_log.mu);
	t = rig_log.total;
	pthread_mutex_unlock(&rig_log.mu);
	return t;
}

/* Copies what was logged since mark (its last RIG_LOG_RING bytes at most)
 * into out; returns the length. */
int rig_log_since(uint64_t mark, char *out, int out_len)
{
	int n;
	pthread_mutex_lock(&rig_log.mu);
	if (mark > rig_log.total)
		mark = rig_log.total;
	if (rig_log.total - mark > RIG_LOG_RING)
		mark = rig_log.total - RIG_LOG_RING;
	if (rig_log.total - mark > (uint64_t)out_len)
		mark = rig_log.total - (uint64_t)out_len;
	n = (int)(rig_log.total - mark);
	for (int i = 0; i < n; i++)
		out[i] = rig_log.buf[(mark + (uint64_t)i) % RIG_LOG_RING];
	pthread_mutex_unlock(&rig_log.mu);
	return n;
}

int rig_eal_init(int argc, char **argv)
{
	int r;
	sigset_t all, old;
	/* EAL's console log goes to stdout; keep stdout for results (-o json),
	 * and keep a copy for the explanation of a port's failure. */
	rte_openlog_stream(rig_log_stream());
	/* EAL threads (lcores, interrupt, control) inherit this mask: keep
	 * process signals (SIGINT, SIGTERM...) on Go's threads only. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = rte_eal_init(argc, argv);
	{
		/* a vhost-user peer that hung up during the probe leaves a
		 * SIGPIPE pending on this thread: the write already failed
		 * with EPIPE, the signal must not reach Go */
		sigset_t pipe;
		struct timespec zero = { 0, 0 };
		sigemptyset(&pipe);
		sigaddset(&pipe, SIGPIPE);
		while (sigtimedwait(&pipe, NULL, &zero) > 0)
			;
	}
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
