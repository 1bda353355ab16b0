/* shim_gen.c: the generator: frame template, flows, stamps, rate. */
#include <errno.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_udp.h>
#include <rte_cycles.h>

#include "shim_internal.h"

static void build_tmpl(struct rig_unit *u)
{
	struct rig_gen_conf *g = &u->g;
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)u->tmpl;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	memcpy(eth->dst_addr.addr_bytes, g->dst_mac, 6);
	memcpy(eth->src_addr.addr_bytes, g->src_mac, 6);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(g->pkt_len - sizeof(*eth));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(g->src_ip);
	ip->dst_addr = rte_cpu_to_be_32(g->dst_ip);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(g->sport);
	udp->dst_port = rte_cpu_to_be_16(g->dport);
	udp->dgram_len = rte_cpu_to_be_16(g->pkt_len - sizeof(*eth) - sizeof(*ip));
	udp->dgram_cksum = 0;
}

/* set_flow writes flow (src fastest, then dst, sport, dport) into the
 * headers at d, a copy of the template, and its IPv4 checksum. */
static void set_flow(const struct rig_gen_conf *g, uint8_t *d, uint32_t is, uint32_t id, uint32_t isp, uint32_t idp)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d + 14);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	ip->src_addr = rte_cpu_to_be_32(g->src_ip + is);
	ip->dst_addr = rte_cpu_to_be_32(g->dst_ip + id);
	udp->src_port = rte_cpu_to_be_16(g->sport + isp);
	udp->dst_port = rte_cpu_to_be_16(g->dport + idp);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

/* next_flow advances the flow counters in set_flow's order. */
static inline void next_flow(const struct rig_gen_conf *g, uint32_t *is, uint32_t *id, uint32_t *isp, uint32_t *idp)
{
	if (++*is == g->n_src_ip) {
		*is = 0;
		if (++*id == g->n_dst_ip) {
			*id = 0;
			if (++*isp == g->n_sport) {
				*isp = 0;
				if (++*idp == g->n_dport)
					*idp = 0;
			}
		}
	}
}

/* build_flows prebuilds every flow's headers when there are several and
 * not too many: the hot loop then copies one cache line per frame and
 * writes only the stamp, as with a single flow. */
static int build_flows(struct rig_unit *u)
{
	uint32_t is = 0, id = 0, isp = 0, idp = 0;
	if (u->n_flows < 2 || u->n_flows > RIG_MAX_FLOW_TMPL)
		return 0;
	u->flows = rte_zmalloc("rig_flows", (size_t)u->n_flows * RIG_FLOW_STRIDE, RTE_CACHE_LINE_SIZE);
	if (u->flows == NULL)
		return -ENOMEM;
	for (uint32_t f = 0; f < u->n_flows; f++) {
		uint8_t *d = u->flows + (size_t)f * RIG_FLOW_STRIDE;
		memcpy(d, u->tmpl, RIG_HDR_LEN);
		set_flow(&u->g, d, is, id, isp, idp);
		next_flow(&u->g, &is, &id, &isp, &idp);
	}
	return 0;
}

int rig_unit_gen(struct rig_unit *u, const struct rig_gen_conf *c)
{
	u->g = *c;
	if (u->g.n_src_ip == 0) u->g.n_src_ip = 1;
	if (u->g.n_dst_ip == 0) u->g.n_dst_ip = 1;
	if (u->g.n_sport == 0) u->g.n_sport = 1;
	if (u->g.n_dport == 0) u->g.n_dport = 1;
	if (c->pcap_n == 0) {
		if (c->pkt_len < 60 || c->pkt_len + RTE_PKTMBUF_HEADROOM >
		    rte_pktmbuf_data_room_size(u->mp))
			return -EINVAL;
		build_tmpl(u);
	}
	{
		uint64_t nf = (uint64_t)u->g.n_src_ip * u->g.n_dst_ip * u->g.n_sport * u->g.n_dport;
		u->n_flows = nf > UINT32_MAX ? UINT32_MAX : (uint32_t)nf;
	}
	u->cyc_per_pkt = c->pps > 0 ? (double)rte_get_tsc_hz() / c->pps : 0;
	rte_free(u->flows);
	u->flows = NULL;
	if (c->pcap_n == 0)
		return build_flows(u);
	return 0;
}

static inline void stamp(uint8_t *p, uint16_t stream, uint64_t seq, uint64_t tsc)
{
	uint16_t magic = RIG_STAMP_MAGIC;
	uint64_t ss = ((uint64_t)stream << 48) | (seq & 0xffffffffffffULL);
	memcpy(p, &magic, 2);
	memcpy(p + 2, &ss, 8);
	memcpy(p + 10, &tsc, 8);
}

static void gen_fill(struct rig_unit *u, struct rte_mbuf **pkts, uint16_t n, uint64_t tsc)
{
	struct rig_gen_conf *g = &u->g;
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
		uint32_t len;
		if (g->pcap_n) {
			len = g->pcap_len[u->pcap_i];
			rte_memcpy(d, g->pcap_data + g->pcap_off[u->pcap_i], len);
			if (++u->pcap_i == g->pcap_n)
				u->pcap_i = 0;
		} else {
			uint32_t f = u->flow_i;
			if (++u->flow_i == u->n_flows)
				u->flow_i = 0;
			len = g->pkt_len;
			if (u->flows != NULL) {
				rte_memcpy(d, u->flows + (size_t)f * RIG_FLOW_STRIDE, RIG_HDR_LEN);
			} else {
				rte_memcpy(d, u->tmpl, RIG_HDR_LEN);
				if (u->n_flows > 1) { /* too many to prebuild */
					set_flow(g, d, u->i_src, u->i_dst, u->i_sport, u->i_dport);
					next_flow(g, &u->i_src, &u->i_dst, &u->i_sport, &u->i_dport);
				}
			}
			if (g->stamp) {
				/* one sequence per flow slot: RSS sends a flow to one
				 * queue, so each receiver sees its sequences in order */
				uint32_t slot = f % RIG_FLOW_SLOTS;
				stamp(d + RIG_HDR_LEN, (uint16_t)((g->stream << 10) | slot), u->seq[slot]++, tsc);
			}
		}
		u->pend_len[i] = len;
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
		m->nb_segs = 1;
		m->next = NULL;
	}
}

void rig_gen_step(struct rig_unit *u)
{
	struct rig_counters *c = &u->c;
	if (u->pend_off == u->pend_n) {
		uint16_t n = u->burst;
		uint64_t now;
		if (GET_FLAG(c->done)) {
			unit_tx_idle(u);
			return;
		}
		if (u->g.count && u->g.count - u->sent < n)
			n = (uint16_t)(u->g.count - u->sent);
		now = rte_rdtsc();
		if (u->cyc_per_pkt > 0) {
			if (u->next_tsc == 0)
				u->next_tsc = (double)now;
			if ((double)now < u->next_tsc) {
				unit_tx_idle(u);
				return;
			}
			u->next_tsc += u->cyc_per_pkt * n;
			/* catch up after short preemptions (keeps the average
			 * rate), but not after stalls longer than 50 ms */
			if (u->next_tsc < (double)now - (double)rte_get_tsc_hz() / 20)
				u->next_tsc = (double)now;
		}
		if (rte_pktmbuf_alloc_bulk(u->mp, u->pend, n) != 0)
			return;
		gen_fill(u, u->pend, n, now);
		u->pend_off = 0;
		u->pend_n = n;
		u->sent += n;
	}
	uint16_t want = u->pend_n - u->pend_off;
	uint16_t k = rte_eth_tx_burst(u->tx_port, u->tx_queue, u->pend + u->pend_off, want);
	if (k) {
		uint64_t bytes = 0, t = rte_rdtsc();
		if (c->tx_first_tsc == 0)
			ST(c->tx_first_tsc, t);
		ST(c->tx_last_tsc, t);
		for (uint16_t i = 0; i < k; i++)
			bytes += u->pend_len[u->pend_off + i];
		ST(c->tx_pkts, c->tx_pkts + k);
		ST(c->tx_bytes, c->tx_bytes + bytes);
		u->pend_off += k;
		unit_tx_sent(u, k);
	}
	if (u->pend_off == u->pend_n && u->g.count && u->sent >= u->g.count)
		SET_FLAG(c->done, 1); /* after tx_pkts: Go sees both */
}
