//go:build dpdkstatic

// libpcap's D-Bus capture source, left out of the static link.
//
// Debian's libpcap.a is built with D-Bus capture ("dbus-system" and
// "dbus-session" as capture devices): pcap_create and pcap_findalldevs
// reach it through pcap.c's table of capture sources, so linking libpcap.a
// pulls in pcap-dbus.o and with it libdbus-1.a, whose socket code needs
// libsystemd's sd_listen_fds, of which Debian ships no static archive.
// rig opens pcap files and network interfaces through DPDK's net_pcap,
// never a D-Bus bus, so these two definitions (found before libpcap.a, so
// pcap-dbus.o is never taken from it) do what a libpcap configured with
// --disable-dbus does: no D-Bus device is listed, and no device name is
// D-Bus's ("not ours", so pcap_create tries the next source). Signatures:
// libpcap 1.10's pcap-dbus.h (pcap_if_list_t is libpcap-internal).

#include <stddef.h>
#include <pcap/pcap.h>

struct pcap_if_list;

pcap_t *dbus_create(const char *device, char *ebuf, int *is_ours);
int dbus_findalldevs(struct pcap_if_list *devlistp, char *err_str);

pcap_t *dbus_create(const char *device, char *ebuf, int *is_ours)
{
	(void)device;
	(void)ebuf;
	*is_ours = 0;
	return NULL;
}

int dbus_findalldevs(struct pcap_if_list *devlistp, char *err_str)
{
	(void)devlistp;
	(void)err_str;
	return 0;
}
