/* shim_rx.c: the receiver: counts, sequence loss/reorder, latency
 * (min/max/sum and the histogram, per stamped frame), capture. Frames
 * without rig's signature (rig_signature) are counted apart as foreign
 * and are not received: a real link carries ARP, IPv6 ND/MLD, LLDP, STP
 * besides rig's frames. A frame with the signature but no stamp is
 * received and unstamped (the run is invalid: another IPv4/UDP sender, or
 * a rig frame whose stamp was damaged). */
#include <string.h>

#include <rte_cycles.h>

#include "shim_internal.h"

/* rig_signature: the frame is what rig's generator sends (Ethernet II,
 * IPv4 without options, UDP), read from the first segment. */
static inline int rig_signature(const uint8_t *d, uint32_t seg_len)
{
	if (seg_len < RIG_HDR_LEN)
		return 0;
	return d[12] == 0x08 && d[13] == 0x00 && d[14] == 0x45 && d[23] == 17 /* UDP */;
}

int rig_frame_is_rig(const uint8_t *d, uint32_t len) { return rig_signature(d, len); }

static inline void rx_account(struct rig_unit *u, struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	struct rig_counters *c = &u->c;
	uint64_t bytes = 0, stamped = 0, lost = 0, reord = 0, lsum = 0, foreign = 0;
	uint64_t lmin, lmax;
	if (unlikely(GET_FLAG(u->lat_reset))) {
		/* end of warm-up: latency stats restart (only this lcore writes them) */
		ST(c->lat_min, UINT64_MAX);
		ST(c->lat_max, 0);
		ST(c->lat_sum, 0);
		ST(c->lat_n, 0);
		for (int i = 0; i < RIG_HIST_N; i++)
			ST(u->hist[i], 0);
		SET_FLAG(u->lat_reset, 0);
	}
	lmin = c->lat_min;
	lmax = c->lat_max;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint32_t len = rte_pktmbuf_pkt_len(m);
		const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
		if (!u->keep_foreign && !rig_signature(d, m->data_len)) {
			foreign++;
			continue;
		}
		bytes += len;
		if (u->cap_on && u->cap_n < u->cap_max) {
			uint32_t sl = len < u->cap_snap ? len : u->cap_snap;
			rte_memcpy(u->cap_data + (size_t)u->cap_n * u->cap_snap, d,
				   sl <= m->data_len ? sl : m->data_len);
			u->cap_len[u->cap_n] = len;
			ST(u->cap_n, u->cap_n + 1);
		}
		if (len < RIG_HDR_LEN + RIG_STAMP_LEN || m->data_len < RIG_HDR_LEN + RIG_STAMP_LEN)
			continue;
		uint16_t magic;
		memcpy(&magic, d + RIG_HDR_LEN, 2);
		if (magic != RIG_STAMP_MAGIC)
			continue;
		uint64_t ss, tsc;
		memcpy(&ss, d + RIG_HDR_LEN + 2, 8);
		memcpy(&tsc, d + RIG_HDR_LEN + 10, 8);
		uint16_t stream = (uint16_t)(ss >> 48) % RIG_MAX_STREAMS;
		uint64_t seq = ss & 0xffffffffffffULL;
		stamped++;
		if (seq == u->expect[stream]) {
			u->expect[stream] = seq + 1;
		} else if (seq > u->expect[stream]) {
			lost += seq - u->expect[stream];
			u->expect[stream] = seq + 1;
		} else {
			reord++;
			if (lost > 0)
				lost--;
			else if (c->lost > 0)
				ST(c->lost, c->lost - 1);
		}
		uint64_t lat = now > tsc ? now - tsc : 0;
		lsum += lat;
		if (lat < lmin) lmin = lat;
		if (lat > lmax) lmax = lat;
		uint32_t h = hist_idx(lat);
		ST(u->hist[h], u->hist[h] + 1);
	}
	if (foreign)
		ST(c->foreign, c->foreign + foreign);
	ST(c->rx_pkts, c->rx_pkts + (n - foreign));
	ST(c->rx_bytes, c->rx_bytes + bytes);
	if (stamped) {
		ST(c->stamped, c->stamped + stamped);
		ST(c->lost, c->lost + lost);
		ST(c->reordered, c->reordered + reord);
		ST(c->lat_sum, c->lat_sum + lsum);
		ST(c->lat_n, c->lat_n + stamped);
		ST(c->lat_min, lmin);
		ST(c->lat_max, lmax);
	}
}

void rig_rx_step(struct rig_unit *u)
{
	struct rte_mbuf *pkts[RIG_MAX_BURST];
	uint16_t n = rte_eth_rx_burst(u->rx_port, u->rx_queue, pkts, u->burst);
	if (n == 0)
		return;
	rx_account(u, pkts, n, rte_rdtsc());
	rte_pktmbuf_free_bulk(pkts, n);
}

uint32_t rig_hist_idx(uint64_t v) { return hist_idx(v); }
