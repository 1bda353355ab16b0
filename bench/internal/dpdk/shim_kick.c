/* shim_kick.c: kicking an af_packet tx port's sockets while a unit is
 * idle after a tx (shim_internal.h: why). */
#include <errno.h>
#include <sys/socket.h>

#include <rte_cycles.h>

#include "shim_internal.h"

/* RIG_KICK_GAP_US: a kick once the unit was idle this long after its last
 * tx (or kick): not between the bursts of a steady stream, whose next
 * burst kicks anyway; a syscall, never on the per-frame path. */
#define RIG_KICK_GAP_US 50

int rig_unit_tx_kick(struct rig_unit *u, const int *fds, int n)
{
	if (n < 0 || n > RIG_MAX_KICK_FDS)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		u->kick_fd[i] = fds[i];
	u->kick_n = (uint8_t)n;
	u->kick_gap = rte_get_tsc_hz() / 1000000 * RIG_KICK_GAP_US;
	return 0;
}

void rig_tx_kick(struct rig_unit *u)
{
	uint64_t now = rte_rdtsc();
	if (now - u->kick_tsc < u->kick_gap)
		return;
	u->kick_tsc = now;
	int left = 0;
	uint64_t sent = 0;
	for (int i = 0; i < u->kick_n; i++) {
		/* tpacket_snd: the bytes of the queued frames it sent, 0 when
		 * none was queued, EAGAIN/ENOBUFS when it could take none yet */
		ssize_t r = sendto(u->kick_fd[i], NULL, 0, MSG_DONTWAIT, NULL, 0);
		if (r > 0) {
			sent++;
			left = 1; /* maybe not all: kick again */
		} else if (r < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
			left = 1;
		}
	}
	if (sent)
		ST(u->c.tx_kicks, u->c.tx_kicks + sent);
	u->kick_pending = (uint8_t)left;
}
