/* shim.h: the C side of rig's embedded DPDK dataplane. Go configures,
 * starts, stops and reads counters; the hot loops below run on EAL worker
 * lcores. Nothing here keeps global mutable state except what EAL owns. */
#ifndef RIG_SHIM_H
#define RIG_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define RIG_MAX_BURST 512
#define RIG_MAX_UNITS 32
#define RIG_MAX_KICK_FDS 8   /* af_packet sockets of a unit's tx port it kicks */
#define RIG_MAX_STREAMS 4096 /* rx: (stream << 10 | flow slot) keys tracked */
#define RIG_FLOW_SLOTS 1024  /* gen: one sequence per flow slot, so RSS keeps each in order */
/* Latency histogram (HdrHistogram-style, log-linear, in TSC cycles):
 * values below RIG_HIST_SUB have a bucket each; above, every power of two
 * is split into RIG_HIST_SUB buckets of equal width, so a bucket is at
 * most 1/128 of its values wide (2 significant decimal digits, as
 * HdrHistogram's numberOfSignificantValueDigits = 2). Values of
 * 2^RIG_HIST_MAX_BITS cycles (minutes) and more share the last bucket. */
#define RIG_HIST_SUB_BITS 7
#define RIG_HIST_SUB (1u << RIG_HIST_SUB_BITS)
#define RIG_HIST_MAX_BITS 40
#define RIG_HIST_N ((RIG_HIST_MAX_BITS - RIG_HIST_SUB_BITS + 1) * RIG_HIST_SUB)
#define RIG_STAMP_MAGIC 0x5247u /* "RG" */
#define RIG_HDR_LEN 42          /* eth 14 + ipv4 20 + udp 8 */
#define RIG_FLOW_STRIDE 64      /* gen: one flow's prebuilt headers, a cache line */
#define RIG_MAX_FLOW_TMPL 16384 /* gen: flows prebuilt (1 MiB); more are patched per frame */
#define RIG_STAMP_LEN 18        /* magic 2 + stream|seq 8 + tsc 8 */

enum { RIG_GEN = 1, RIG_RX = 2, RIG_FWD = 3 };
enum { RIG_FWD_IO = 0, RIG_FWD_MAC = 1, RIG_FWD_MACSWAP = 2 };

/* Counters of one unit: written only by its lcore (relaxed atomic stores),
 * read by Go with relaxed atomic loads. */
struct rig_counters {
	uint64_t rx_pkts, rx_bytes;
	uint64_t tx_pkts, tx_bytes;
	uint64_t drops;          /* fwd: frames received but not sent */
	uint64_t policed;        /* fwd: frames over --max-rate, dropped on arrival */
	uint64_t stamped;        /* rx: frames that carried a rig stamp */
	uint64_t lost;           /* rx: sequence gaps (frames skipped) */
	uint64_t reordered;      /* rx: frames older than the expected seq */
	uint64_t lat_min, lat_max, lat_sum; /* TSC cycles */
	uint64_t lat_n;          /* rx: latency samples since the last reset */
	uint64_t done;           /* gen: count reached */
	uint64_t tx_first_tsc, tx_last_tsc; /* gen: TSC of the first and the last accepted burst */
	uint64_t tx_kicks;       /* af_packet tx: idle kicks that sent frames left queued (shim_kick.c) */
	uint64_t foreign;        /* rx: frames without rig's signature (not IPv4/UDP: ARP, IPv6 ND, LLDP, STP),
				  * not in rx_pkts/rx_bytes (rig_unit_keep_foreign: counted in them too) */
};

struct rig_gen_conf {
	uint32_t pkt_len;        /* frame length without FCS */
	uint16_t stream;         /* stream id (tx queue), < 64 */
	uint8_t stamp;           /* 1: write seq+tsc (not for pcap replay) */
	uint8_t dst_mac[6], src_mac[6];
	uint32_t src_ip, dst_ip; /* host order, first of range */
	uint32_t n_src_ip, n_dst_ip;
	uint16_t sport, dport;
	uint32_t n_sport, n_dport;
	uint64_t count;          /* 0: unlimited */
	double pps;              /* 0: as fast as possible */
	/* pcap replay: concatenated frames */
	const uint8_t *pcap_data;
	const uint32_t *pcap_off, *pcap_len;
	uint32_t pcap_n;
};

struct rig_unit; /* opaque to Go */

int rig_eal_init(int argc, char **argv);
int rig_eal_cleanup(void);
const char *rig_eal_runtime_dir(void);
const char *rig_strerror(int err);
int rig_errno(void);
uint64_t rig_log_mark(void);
int rig_log_since(uint64_t mark, char *out, int out_len);

void *rig_mempool_create(const char *name, uint32_t n, uint32_t cache, uint32_t data_room);
void rig_mempool_free(void *mp);

int rig_port_by_name(const char *name, uint16_t *port);
int rig_port_count(void);
int rig_port_setup(uint16_t port, uint16_t nb_rxq, uint16_t nb_txq, uint16_t nb_rxd,
		   uint16_t nb_txd, int rss, void *mp);
int rig_port_mac(uint16_t port, uint8_t *mac);
int rig_port_ifindex(uint16_t port); /* the kernel netdev behind it (af_packet, tap), 0: none */
int rig_port_info(uint16_t port, char *driver, int driver_len, uint32_t *speed_mbps, int *link_up);
int rig_port_stop_close(uint16_t port);
int rig_port_drop_stats(uint16_t port, uint64_t *imissed, uint64_t *ierrors, uint64_t *oerrors, uint64_t *rx_nombuf);
int rig_port_xstat(uint16_t port, const char *name, uint64_t *value); /* 0: found */

size_t rig_unit_size(void);
struct rig_unit *rig_unit_new(int kind, uint16_t rx_port, uint16_t rx_queue,
			      uint16_t tx_port, uint16_t tx_queue, uint16_t burst, void *mp);
int rig_unit_gen(struct rig_unit *u, const struct rig_gen_conf *c);
void rig_unit_fwd(struct rig_unit *u, int mode, const uint8_t *dst_mac, const uint8_t *src_mac, uint32_t tx_retry);
/* fwd: forward at most pps frames per second (token bucket of depth
 * frames, restarted with restart tokens after idle_s seconds without a
 * frame; both at least a burst); the rest are freed on arrival (policed). */
void rig_unit_police(struct rig_unit *u, double pps, uint32_t depth, uint32_t restart, double idle_s);
int rig_unit_capture(struct rig_unit *u, uint32_t n, uint32_t snap);
uint32_t rig_unit_captured(struct rig_unit *u, uint8_t **data, uint32_t **lens, uint32_t *snap);
void rig_unit_txfirst(struct rig_unit *u, uint16_t n);
void rig_unit_keep_foreign(struct rig_unit *u, int on); /* rx: count every frame as received (pcap replay) */
void rig_unit_snapshot(const struct rig_unit *u, struct rig_counters *out);
/* rx: copies the latency histogram (RIG_HIST_N buckets) into out. */
void rig_unit_hist(const struct rig_unit *u, uint64_t *out);
uint32_t rig_hist_idx(uint64_t v); /* the bucket of v (for Go's tests) */
int rig_frame_is_rig(const uint8_t *d, uint32_t len); /* rig_signature (for Go's tests) */
void rig_unit_free(struct rig_unit *u);
/* tx: the tx port's AF_PACKET sockets (net_af_packet), kicked while the
 * unit is idle after a tx until nothing is left queued (shim_kick.c). */
int rig_unit_tx_kick(struct rig_unit *u, const int *fds, int n);

/* Runs units on a worker lcore until rig_stop. */
int rig_launch(unsigned lcore, struct rig_unit **units, int n);
void rig_stop(void);
void rig_unit_halt(struct rig_unit *u); /* gen: stop sending */
void rig_unit_lat_reset(struct rig_unit *u); /* rx: drop latency stats so far (warm-up) */
int rig_unit_lat_reset_pending(const struct rig_unit *u); /* 1: not applied yet (no frame since) */
int rig_wait_all(void);
int rig_worker_tid(unsigned lcore);
uint64_t rig_tsc_hz(void);
uint64_t rig_rdtsc(void);
unsigned rig_main_lcore(void);
int rig_next_lcore(int prev);
int rig_lcore_cpu(unsigned lcore);
int rig_thread_register(void);

#endif
