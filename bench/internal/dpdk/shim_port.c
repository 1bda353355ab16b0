/* shim_port.c: find, configure, start, query and close ethdev ports. */
#include <string.h>
#include <stdio.h>

#include "shim_internal.h"

/* A port by its device name (net_ring0, 0000:03:00.0), else by devargs
 * (0000:03:00.0,representor=[65535] names the representor's ethdev, which
 * mlx5 names differently; 0000:03:00.0,mprq_en=1 the PF): the first port
 * they match, as OvS finds a dpdk port (rte_eth_iterator_init). */
int rig_port_by_name(const char *name, uint16_t *port)
{
	struct rte_dev_iterator it;
	uint16_t id;
	int r = rte_eth_dev_get_port_by_name(name, port);

	if (r == 0 || strchr(name, ',') == NULL)
		return r;
	if (rte_eth_iterator_init(&it, name) != 0)
		return r;
	id = rte_eth_iterator_next(&it);
	if (id == RTE_MAX_ETHPORTS)
		return r; /* the iterator cleaned up at its end */
	rte_eth_iterator_cleanup(&it);
	*port = id;
	return 0;
}

int rig_port_count(void) { return rte_eth_dev_count_avail(); }

int rig_port_setup(uint16_t port, uint16_t nb_rxq, uint16_t nb_txq, uint16_t nb_rxd,
		   uint16_t nb_txd, int rss, void *mp)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	int r, q;

	memset(&conf, 0, sizeof(conf));
	r = rte_eth_dev_info_get(port, &info);
	if (r != 0)
		return r;
	if (rss && nb_rxq > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP) & info.flow_type_rss_offloads;
		if (conf.rx_adv_conf.rss_conf.rss_hf == 0)
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	r = rte_eth_dev_configure(port, nb_rxq, nb_txq, &conf);
	if (r != 0)
		return r;
	r = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd);
	if (r != 0)
		return r;
	for (q = 0; q < nb_rxq; q++) {
		r = rte_eth_rx_queue_setup(port, q, nb_rxd, rte_eth_dev_socket_id(port), NULL, mp);
		if (r != 0)
			return r;
	}
	for (q = 0; q < nb_txq; q++) {
		struct rte_eth_txconf txc = info.default_txconf;
		txc.offloads = conf.txmode.offloads;
		r = rte_eth_tx_queue_setup(port, q, nb_txd, rte_eth_dev_socket_id(port), &txc);
		if (r != 0)
			return r;
	}
	rte_eth_promiscuous_enable(port); /* not all vdevs support it */
	return rte_eth_dev_start(port);
}

int rig_port_mac(uint16_t port, uint8_t *mac)
{
	struct rte_ether_addr a;
	int r = rte_eth_macaddr_get(port, &a);
	if (r == 0)
		memcpy(mac, a.addr_bytes, 6);
	return r;
}

int rig_port_info(uint16_t port, char *driver, int driver_len, uint32_t *speed_mbps, int *link_up)
{
	struct rte_eth_dev_info info;
	struct rte_eth_link link;
	int r = rte_eth_dev_info_get(port, &info);
	if (r != 0)
		return r;
	snprintf(driver, driver_len, "%s", info.driver_name ? info.driver_name : "");
	memset(&link, 0, sizeof(link));
	r = rte_eth_link_get_nowait(port, &link);
	if (r != 0)
		return r;
	*speed_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
	*link_up = link.link_status;
	return 0;
}

int rig_port_ifindex(uint16_t port)
{
	struct rte_eth_dev_info info;
	if (rte_eth_dev_info_get(port, &info) != 0)
		return 0;
	return (int)info.if_index;
}

int rig_port_stop_close(uint16_t port)
{
	int r1 = rte_eth_dev_stop(port);
	int r2 = rte_eth_dev_close(port);
	return r1 != 0 ? r1 : r2;
}

int rig_port_drop_stats(uint16_t port, uint64_t *imissed, uint64_t *ierrors, uint64_t *oerrors, uint64_t *rx_nombuf)
{
	struct rte_eth_stats st;
	int r = rte_eth_stats_get(port, &st);
	if (r != 0)
		return r;
	*imissed = st.imissed;
	*ierrors = st.ierrors;
	*oerrors = st.oerrors;
	*rx_nombuf = st.rx_nombuf;
	return 0;
}

int rig_port_xstat(uint16_t port, const char *name, uint64_t *value)
{
	uint64_t id;
	int r = rte_eth_xstats_get_id_by_name(port, name, &id);
	if (r != 0)
		return r;
	r = rte_eth_xstats_get_by_id(port, &id, value, 1);
	return r == 1 ? 0 : -1;
}
