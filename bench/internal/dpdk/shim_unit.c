/* shim_unit.c: a unit's allocation, forwarder/capture set-up, counters
 * snapshot, halt and latency reset (the generator's is in shim_gen.c). */
#include <errno.h>
#include <string.h>

#include <rte_malloc.h>

#include "shim_internal.h"

size_t rig_unit_size(void) { return sizeof(struct rig_unit); }

struct rig_unit *rig_unit_new(int kind, uint16_t rx_port, uint16_t rx_queue,
			      uint16_t tx_port, uint16_t tx_queue, uint16_t burst, void *mp)
{
	struct rig_unit *u = rte_zmalloc("rig_unit", sizeof(*u), RTE_CACHE_LINE_SIZE);
	if (u == NULL)
		return NULL;
	if (burst == 0 || burst > RIG_MAX_BURST)
		burst = 32;
	u->kind = kind;
	u->rx_port = rx_port;
	u->rx_queue = rx_queue;
	u->tx_port = tx_port;
	u->tx_queue = tx_queue;
	u->burst = burst;
	u->mp = mp;
	u->c.lat_min = UINT64_MAX;
	return u;
}

void rig_unit_fwd(struct rig_unit *u, int mode, const uint8_t *dst_mac, const uint8_t *src_mac, uint32_t tx_retry)
{
	u->fwd_mode = mode;
	u->tx_retry = tx_retry;
	memcpy(u->fwd_dst.addr_bytes, dst_mac, 6);
	memcpy(u->fwd_src.addr_bytes, src_mac, 6);
}

void rig_unit_txfirst(struct rig_unit *u, uint16_t n) { u->txfirst = n; }

void rig_unit_keep_foreign(struct rig_unit *u, int on) { u->keep_foreign = on != 0; }

int rig_unit_capture(struct rig_unit *u, uint32_t n, uint32_t snap)
{
	u->cap_data = rte_zmalloc("rig_cap", (size_t)n * snap, 0);
	u->cap_len = rte_zmalloc("rig_cap_len", (size_t)n * sizeof(uint32_t), 0);
	if (u->cap_data == NULL || u->cap_len == NULL)
		return -ENOMEM;
	u->cap_max = n;
	u->cap_snap = snap;
	u->cap_on = 1;
	return 0;
}

uint32_t rig_unit_captured(struct rig_unit *u, uint8_t **data, uint32_t **lens, uint32_t *snap)
{
	*snap = u->cap_snap;
	*data = u->cap_data;
	*lens = u->cap_len;
	return LD(u->cap_n);
}

void rig_unit_snapshot(const struct rig_unit *u, struct rig_counters *out)
{
	const struct rig_counters *c = &u->c;
	out->rx_pkts = LD(c->rx_pkts);
	out->rx_bytes = LD(c->rx_bytes);
	out->tx_pkts = LD(c->tx_pkts);
	out->tx_bytes = LD(c->tx_bytes);
	out->drops = LD(c->drops);
	out->policed = LD(c->policed);
	out->stamped = LD(c->stamped);
	out->lost = LD(c->lost);
	out->reordered = LD(c->reordered);
	out->lat_min = LD(c->lat_min);
	out->lat_max = LD(c->lat_max);
	out->lat_sum = LD(c->lat_sum);
	out->lat_n = LD(c->lat_n);
	out->tx_first_tsc = LD(c->tx_first_tsc);
	out->tx_last_tsc = LD(c->tx_last_tsc);
	out->tx_kicks = LD(c->tx_kicks);
	out->foreign = LD(c->foreign);
	out->done = GET_FLAG(c->done);
}

void rig_unit_hist(const struct rig_unit *u, uint64_t *out)
{
	for (int i = 0; i < RIG_HIST_N; i++)
		out[i] = LD(u->hist[i]);
}

void rig_unit_free(struct rig_unit *u)
{
	if (u == NULL)
		return;
	for (uint16_t i = u->pend_off; i < u->pend_n; i++)
		rte_pktmbuf_free(u->pend[i]);
	rte_free(u->flows);
	rte_free(u->cap_data);
	rte_free(u->cap_len);
	rte_free(u);
}

void rig_unit_halt(struct rig_unit *u) { SET_FLAG(u->c.done, 1); }
void rig_unit_lat_reset(struct rig_unit *u) { SET_FLAG(u->lat_reset, 1); }
int rig_unit_lat_reset_pending(const struct rig_unit *u) { return (int)GET_FLAG(u->lat_reset); }
