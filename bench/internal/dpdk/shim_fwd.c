/* shim_fwd.c: the forwarder (io, mac, macswap), tx-first and the
 * all-forwarder lcore loop. */
#include <string.h>

#include <rte_cycles.h>

#include "shim_internal.h"

/* fwd_police applies --max-rate to a received burst: the bucket gains
 * tb_rate tokens per TSC cycle since the last burst, up to tb_depth; each
 * forwarded frame takes one, and the frames beyond the tokens are freed
 * here (a policer: the DUT takes every frame off the wire and forwards at
 * most the rate, so what it cannot carry is lost, not back-pressured).
 * After tb_idle cycles without a frame the traffic had stopped: the bucket
 * restarts with tb_restart tokens, so a new run finds little credit saved
 * up while nothing came. It returns the frames left to forward, at the
 * front of pkts. */
static inline uint16_t fwd_police(struct rig_unit *u, struct rte_mbuf **pkts, uint16_t nb, uint64_t *policed)
{
	if (likely(u->tb_rate == 0))
		return nb;
	uint64_t now = rte_rdtsc();
	uint64_t gap = now - u->tb_last;
	double t = u->tb_tokens + (double)gap * u->tb_rate;
	u->tb_last = now;
	if (gap > u->tb_idle)
		t = u->tb_restart;
	if (t > u->tb_depth)
		t = u->tb_depth;
	uint16_t ok = t >= (double)nb ? nb : (uint16_t)t;
	u->tb_tokens = t - ok;
	if (ok < nb) {
		rte_pktmbuf_free_bulk(pkts + ok, nb - ok);
		*policed += nb - ok;
	}
	return ok;
}

void rig_unit_police(struct rig_unit *u, double pps, uint32_t depth, uint32_t restart, double idle_s)
{
	u->tb_rate = pps > 0 ? pps / (double)rte_get_tsc_hz() : 0;
	u->tb_depth = depth > u->burst ? (double)depth : (double)u->burst;
	u->tb_restart = restart > u->burst ? (double)restart : (double)u->burst;
	u->tb_idle = (uint64_t)(idle_s * (double)rte_get_tsc_hz());
	u->tb_tokens = u->tb_restart;
	/* nothing came yet: the first burst restarts the bucket, as after any
	 * idle spell (a forwarder started shortly before its traffic would
	 * otherwise have saved up to tb_depth of credit: 250 ms above the cap) */
	u->tb_last = rte_rdtsc() - u->tb_idle - 1;
}

void rig_fwd_step(struct rig_unit *u)
{
	struct rig_counters *c = &u->c;
	struct rte_mbuf *pkts[RIG_MAX_BURST];
	uint16_t n = rte_eth_rx_burst(u->rx_port, u->rx_queue, pkts, u->burst);
	if (n == 0) {
		unit_tx_idle(u);
		return;
	}
	if (u->fwd_mode == RIG_FWD_MAC) {
		for (uint16_t i = 0; i < n; i++) {
			struct rte_ether_hdr *e = rte_pktmbuf_mtod(pkts[i], struct rte_ether_hdr *);
			rte_ether_addr_copy(&u->fwd_dst, &e->dst_addr);
			rte_ether_addr_copy(&u->fwd_src, &e->src_addr);
		}
	} else if (u->fwd_mode == RIG_FWD_MACSWAP) {
		for (uint16_t i = 0; i < n; i++) {
			struct rte_ether_hdr *e = rte_pktmbuf_mtod(pkts[i], struct rte_ether_hdr *);
			struct rte_ether_addr t = e->dst_addr;
			e->dst_addr = e->src_addr;
			e->src_addr = t;
		}
	}
	uint64_t bytes = 0;
	if (u->fwd_mode != RIG_FWD_IO) /* io never touches the mbufs */
		for (uint16_t i = 0; i < n; i++)
			bytes += pkts[i]->pkt_len;
	ST(c->rx_pkts, c->rx_pkts + n);
	ST(c->rx_bytes, c->rx_bytes + bytes);
	uint64_t policed = 0;
	n = fwd_police(u, pkts, n, &policed);
	if (policed)
		ST(c->policed, c->policed + policed);
	if (n == 0)
		return;
	uint16_t k = rte_eth_tx_burst(u->tx_port, u->tx_queue, pkts, n);
	/* a full tx queue: optionally retry before dropping (testpmd io retry) */
	for (uint32_t r = 0; k < n && r < u->tx_retry; r++) {
		rte_delay_us(1);
		k += rte_eth_tx_burst(u->tx_port, u->tx_queue, pkts + k, n - k);
	}
	ST(c->tx_pkts, c->tx_pkts + k);
	unit_tx_sent(u, k);
	if (k < n) {
		rte_pktmbuf_free_bulk(pkts + k, n - k);
		ST(c->drops, c->drops + (n - k));
	}
}

void rig_fwd_txfirst(struct rig_unit *u)
{
	struct rte_mbuf *pkts[RIG_MAX_BURST];
	uint16_t n = u->txfirst > RIG_MAX_BURST ? RIG_MAX_BURST : u->txfirst;
	if (rte_pktmbuf_alloc_bulk(u->mp, pkts, n) != 0)
		return;
	for (uint16_t i = 0; i < n; i++) {
		uint8_t *d = rte_pktmbuf_mtod(pkts[i], uint8_t *);
		memset(d, 0, 60);
		memset(d, 0xff, 6);
		memcpy(d + 6, u->fwd_src.addr_bytes, 6);
		d[12] = 0x08;
		pkts[i]->data_len = 60;
		pkts[i]->pkt_len = 60;
	}
	uint16_t k = rte_eth_tx_burst(u->tx_port, u->tx_queue, pkts, n);
	if (k < n)
		rte_pktmbuf_free_bulk(pkts + k, n - k);
}

/* A forwarder's rx and tx queues, as the all-forwarder loop calls them.
 *
 * With RIG_DIRECT_BURST (DPDK 22.11, see shim_internal.h) each unit's PMD
 * burst functions and queue data are resolved once instead of
 * rte_eth_rx/tx_burst's per-call lookups in rte_eth_fp_ops (and its rx/tx
 * callback checks). rte_eth_fp_ops is in rte_ethdev_core.h: public because
 * the inline burst functions use it, not meant for applications. rig
 * accepts that here because it owns the ports, installs no callbacks, and
 * the entries are fixed between the rte_eth_dev_start and rte_eth_dev_stop
 * that bracket this loop. Measured with make bench: io fwd net_ring 1.03x
 * -> 1.36x testpmd, net_null 1.23x -> 1.27x. Other DPDK versions take the
 * public rte_eth_rx/tx_burst. */
struct fwd_path {
	struct rig_unit *u;
#ifdef RIG_DIRECT_BURST
	eth_rx_burst_t rxf;
	eth_tx_burst_t txf;
	void *rxq, *txq;
#endif
};

static void fwd_path_init(struct fwd_path *p, struct rig_unit *u)
{
	p->u = u;
#ifdef RIG_DIRECT_BURST
	struct rte_eth_fp_ops *rp = &rte_eth_fp_ops[u->rx_port];
	struct rte_eth_fp_ops *tp = &rte_eth_fp_ops[u->tx_port];
	p->rxf = rp->rx_pkt_burst;
	p->rxq = rp->rxq.data[u->rx_queue];
	p->txf = tp->tx_pkt_burst;
	p->txq = tp->txq.data[u->tx_queue];
#endif
}

static inline uint16_t fwd_path_rx(const struct fwd_path *p, struct rte_mbuf **pkts, uint16_t n)
{
#ifdef RIG_DIRECT_BURST
	return p->rxf(p->rxq, pkts, n);
#else
	return rte_eth_rx_burst(p->u->rx_port, p->u->rx_queue, pkts, n);
#endif
}

static inline uint16_t fwd_path_tx(const struct fwd_path *p, struct rte_mbuf **pkts, uint16_t n)
{
#ifdef RIG_DIRECT_BURST
	return p->txf(p->txq, pkts, n);
#else
	return rte_eth_tx_burst(p->u->tx_port, p->u->tx_queue, pkts, n);
#endif
}

/* A forwarder's counters, kept in locals between publications. */
struct fwd_tally {
	uint64_t rx, tx, bytes, drops, policed;
};

/* fwd_rewrite applies mac / macswap to a burst and returns its bytes. */
static inline uint64_t fwd_rewrite(const struct rig_unit *u, struct rte_mbuf **pkts, uint16_t nb)
{
	uint64_t bytes = 0;
	for (uint16_t p = 0; p < nb; p++) {
		struct rte_ether_hdr *e = rte_pktmbuf_mtod(pkts[p], struct rte_ether_hdr *);
		bytes += pkts[p]->pkt_len;
		if (u->fwd_mode == RIG_FWD_MAC) {
			rte_ether_addr_copy(&u->fwd_dst, &e->dst_addr);
			rte_ether_addr_copy(&u->fwd_src, &e->src_addr);
		} else {
			struct rte_ether_addr t = e->dst_addr;
			e->dst_addr = e->src_addr;
			e->src_addr = t;
		}
	}
	return bytes;
}

/* fwd_burst forwards one burst of one unit. */
static inline void fwd_burst(const struct fwd_path *p, struct fwd_tally *t, struct rte_mbuf **pkts)
{
	struct rig_unit *u = p->u;
	uint16_t nb = fwd_path_rx(p, pkts, u->burst);
	if (nb == 0) {
		unit_tx_idle(u);
		return;
	}
	/* io never touches the mbufs: its bytes are not counted (the Go side
	 * reports them as not measured). Summing pkt_len here cost io fwd on
	 * net_ring a quarter of its rate (make bench: 1.32x -> 0.96x testpmd),
	 * and testpmd's io mode reads no mbuf either. */
	if (u->fwd_mode != RIG_FWD_IO)
		t->bytes += fwd_rewrite(u, pkts, nb);
	t->rx += nb;
	nb = fwd_police(u, pkts, nb, &t->policed);
	if (nb == 0)
		return;
	uint16_t k = fwd_path_tx(p, pkts, nb);
	for (uint32_t r = 0; k < nb && r < u->tx_retry; r++) {
		rte_delay_us(1);
		k += fwd_path_tx(p, pkts + k, nb - k);
	}
	t->tx += k;
	unit_tx_sent(u, k);
	if (unlikely(k < nb)) {
		rte_pktmbuf_free_bulk(pkts + k, nb - k);
		t->drops += nb - k;
	}
}

/* rig_fwd_loop is the lcore loop when every unit is a forwarder: no
 * dispatch, counters kept in locals and published every 64 rounds and at
 * the end; the stop flag is polled every round. */
void rig_fwd_loop(struct rig_job *j)
{
	int n = j->n;
	struct fwd_path paths[RIG_MAX_UNITS];
	struct fwd_tally tally[RIG_MAX_UNITS];
	struct rte_mbuf *pkts[RIG_MAX_BURST];
	uint32_t round = 0;

	memset(tally, 0, sizeof(tally));
	for (int i = 0; i < n; i++)
		fwd_path_init(&paths[i], j->units[i]);
	for (;;) {
		for (int i = 0; i < n; i++)
			fwd_burst(&paths[i], &tally[i], pkts);
		int stop = rig_stopping();
		if ((++round & 63) == 0 || stop) {
			for (int i = 0; i < n; i++) {
				struct rig_counters *c = &j->units[i]->c;
				ST(c->rx_pkts, tally[i].rx);
				ST(c->tx_pkts, tally[i].tx);
				ST(c->rx_bytes, tally[i].bytes);
				ST(c->drops, tally[i].drops);
				ST(c->policed, tally[i].policed);
			}
			if (stop)
				return;
		}
	}
}
