/* shim_internal.h: what the shim's C files share (not part of the Go
 * boundary; that is shim.h). One file per role: shim_eal.c (EAL, mempool,
 * lcores), shim_port.c (ports), shim_unit.c (unit set-up and counters),
 * shim_gen.c, shim_rx.c, shim_fwd.c (the hot loops), shim_lcore.c (launch,
 * the stop flag, the lcore main loop), shim_kick.c (kicking an af_packet
 * tx port after its last burst). */
#ifndef RIG_SHIM_INTERNAL_H
#define RIG_SHIM_INTERNAL_H

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_version.h>
#include <rte_cycles.h>

#include "shim.h"

/* Counters: written only by the unit's lcore, read by Go, relaxed. */
#define ST(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#define LD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
/* Flags that order what came before them (stop, done, lat_reset): a
 * release store pairs with an acquire load, so whoever sees the flag set
 * also sees every counter written before it. */
#define SET_FLAG(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELEASE)
#define GET_FLAG(field) __atomic_load_n(&(field), __ATOMIC_ACQUIRE)

/* rte_eth_fp_ops (rte_ethdev_core.h) is the table rte_eth_rx/tx_burst look
 * the PMD's burst functions up in. Its layout is checked against 22.11
 * only: there the forwarder resolves the functions once (RIG_DIRECT_BURST);
 * on any other DPDK version it calls rte_eth_rx/tx_burst instead. */
#if RTE_VERSION >= RTE_VERSION_NUM(22, 11, 0, 0) && RTE_VERSION < RTE_VERSION_NUM(22, 12, 0, 0)
#define RIG_DIRECT_BURST 1
#endif

struct rig_unit {
	int kind;
	uint16_t rx_port, rx_queue, tx_port, tx_queue, burst;
	struct rte_mempool *mp;
	/* gen */
	struct rig_gen_conf g;
	uint8_t tmpl[RIG_HDR_LEN];
	uint32_t i_src, i_dst, i_sport, i_dport, pcap_i;
	uint32_t flow_i, n_flows;
	uint8_t *flows;          /* n_flows prebuilt headers (checksummed), or NULL */
	uint64_t seq[RIG_FLOW_SLOTS];
	uint64_t sent;
	double cyc_per_pkt;
	double next_tsc;
	struct rte_mbuf *pend[RIG_MAX_BURST];
	uint32_t pend_len[RIG_MAX_BURST];
	uint16_t pend_n, pend_off;
	uint16_t txfirst;
	/* fwd */
	int fwd_mode;
	uint32_t tx_retry;
	struct rte_ether_addr fwd_dst, fwd_src;
	/* fwd --max-rate: a token bucket refilled on the TSC (tokens per
	 * cycle; 0: no cap), at most tb_depth frames, last refill tb_last;
	 * restarted with tb_restart after tb_idle cycles without a frame */
	double tb_rate, tb_depth, tb_tokens, tb_restart;
	uint64_t tb_last, tb_idle;
	/* tx kick (shim_kick.c): the tx port's AF_PACKET sockets; pending
	 * from a tx until a kick finds nothing queued; kick_tsc: the last tx
	 * or kick */
	int kick_fd[RIG_MAX_KICK_FDS];
	uint8_t kick_n, kick_pending;
	uint64_t kick_tsc, kick_gap;
	/* rx */
	uint64_t expect[RIG_MAX_STREAMS];
	uint8_t keep_foreign;    /* 1: frames without rig's signature count as received (pcap replay) */
	uint8_t cap_on;
	uint32_t cap_max, cap_snap, cap_n;
	uint8_t *cap_data;
	uint32_t *cap_len;
	uint32_t lat_reset;      /* set by Go, cleared by the lcore */
	struct rig_counters c __rte_cache_aligned;
	/* rx: latency histogram since the last reset, written only by the
	 * unit's lcore (relaxed stores), read by Go once the lcores are
	 * joined; summed over the rx units (each lcore's) by Go */
	uint64_t hist[RIG_HIST_N] __rte_cache_aligned;
};

/* hist_idx is the histogram bucket of v cycles (shim.h: RIG_HIST_*): v
 * itself below RIG_HIST_SUB; above, octave o = msb - SUB_BITS + 1 and the
 * SUB_BITS bits below the leading one. Go mirrors it (bench/histogram.go). */
static inline uint32_t hist_idx(uint64_t v)
{
	if (v < RIG_HIST_SUB)
		return (uint32_t)v;
	if (v >> RIG_HIST_MAX_BITS)
		return RIG_HIST_N - 1;
	int msb = 63 - __builtin_clzll(v);
	uint32_t sub = (uint32_t)(v >> (msb - RIG_HIST_SUB_BITS)) & (RIG_HIST_SUB - 1);
	return (uint32_t)(msb - RIG_HIST_SUB_BITS + 1) * RIG_HIST_SUB + sub;
}

/* net_af_packet's tx burst copies the frames into its socket's TX ring and
 * kicks the kernel once (sendto, MSG_DONTWAIT); when that kick fails with
 * EAGAIN or ENOBUFS the PMD counts the frames sent anyway, and what the
 * kernel did not take stays queued in the ring until the next burst's kick
 * (drivers/net/af_packet/rte_eth_af_packet.c eth_af_packet_tx, DPDK 22.11;
 * a burst of 0 frames returns before kicking). After a run's last burst
 * there is no next one: those frames never leave, and the far end misses
 * exactly them. The kernel's send buffer fills that way when the socket's
 * frames are still in flight through a veth to a busy peer (net/packet's
 * tpacket_snd: sock_alloc_send_skb). So a unit whose tx port is af_packet
 * kicks the port's sockets again while it is idle after a tx
 * (rig_tx_kick), until a kick finds nothing queued. */
void rig_tx_kick(struct rig_unit *u);
static inline void unit_tx_sent(struct rig_unit *u, uint16_t k)
{
	if (unlikely(u->kick_n != 0) && k != 0) {
		u->kick_pending = 1;
		u->kick_tsc = rte_rdtsc(); /* kick once idle this long after it */
	}
}
static inline void unit_tx_idle(struct rig_unit *u)
{
	if (unlikely(u->kick_pending))
		rig_tx_kick(u);
}

/* One lcore's work. */
struct rig_job {
	int n;
	struct rig_unit *units[RIG_MAX_UNITS];
	int tid;
};

/* The one stop flag of every lcore loop: rig_stop sets it (release),
 * each loop polls it (acquire) and returns; rig_launch clears it. */
extern int rig_stop_flag; /* shim_lcore.c */
static inline int rig_stopping(void) { return GET_FLAG(rig_stop_flag); }

void rig_gen_step(struct rig_unit *u);  /* shim_gen.c */
void rig_rx_step(struct rig_unit *u);   /* shim_rx.c */
void rig_fwd_step(struct rig_unit *u);  /* shim_fwd.c */
void rig_fwd_loop(struct rig_job *j);   /* shim_fwd.c: every unit a forwarder */
void rig_fwd_txfirst(struct rig_unit *u);

#endif
