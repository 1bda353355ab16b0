#!/usr/bin/env bash
# Regenerates the fixture host roots in this directory (bf2-dpu-arm, bf2-host,
# bf3-dpu-arm, cx6dx-host). The trees are DATA and are committed; this script
# only documents how they were made and keeps them consistent. Every format
# used here is from ../../../shared/reference/hardware-formats.md (section
# numbers in the comments) or is the generic Linux sysfs layout; see README.md.
#
# Usage: bash testdata/hosts/mkhosts.sh   (from the repository root or anywhere)
set -euo pipefail
cd "$(dirname "$0")"

# put FILE CONTENT: one sysfs attribute (kernel attributes end in "\n").
put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" >"$1"; }
# lnk TARGET LINKNAME: a relative symlink, as sysfs has.
lnk() { mkdir -p "$(dirname "$2")"; ln -sfn "$1" "$2"; }

# pcifn ROOT DEVPATH BDF DEVICE REV NUMA CURSPEED CURWIDTH MAXSPEED MAXWIDTH CLASS
# DEVPATH is below /sys/devices, e.g. pci0000:00/0000:00:00.0/0000:03:00.0.
# vendor/device "0x%04x" (pci-sysfs.c, §4); link speed "16.0 GT/s PCIe" (§4).
pcifn() {
	local root=$1 devpath=$2 bdf=$3 dev=$4 rev=$5 numa=$6 cs=$7 cw=$8 ms=$9 mw=${10} class=${11}
	local d=$root/sys/devices/$devpath
	put "$d/vendor" 0x15b3
	put "$d/device" "$dev"
	put "$d/subsystem_vendor" 0x15b3
	put "$d/revision" "$rev"
	put "$d/class" "$class"
	put "$d/numa_node" "$numa"
	put "$d/current_link_speed" "$cs"
	put "$d/current_link_width" "$cw"
	put "$d/max_link_speed" "$ms"
	put "$d/max_link_width" "$mw"
	# the driver dir, with its write-only bind/unbind (empty here) so git keeps it
	mkdir -p "$root/sys/bus/pci/drivers/mlx5_core"
	: >"$root/sys/bus/pci/drivers/mlx5_core/bind"
	: >"$root/sys/bus/pci/drivers/mlx5_core/unbind"
	local up; up=$(echo "$devpath" | awk -F/ '{s=""; for(i=0;i<NF+1;i++) s=s"../"; print s}')
	lnk "${up}bus/pci/drivers/mlx5_core" "$d/driver"
	lnk "../../../devices/$devpath" "$root/sys/bus/pci/devices/$bdf"
}

# sriov ROOT DEVPATH NUMVFS TOTALVFS OFFSET STRIDE VFDEVICE: the PF's SR-IOV
# attributes (drivers/pci/iov.c: numvfs/totalvfs/offset/stride "%u",
# sriov_vf_device "%x", no 0x). VF N's routing ID is the PF's + OFFSET +
# N*STRIDE (pci_iov_virtfn_devfn); PF1's offset puts its VFs after PF0's.
sriov() {
	put "$1/sys/devices/$2/sriov_numvfs" "$3"; put "$1/sys/devices/$2/sriov_totalvfs" "$4"
	put "$1/sys/devices/$2/sriov_offset" "$5"; put "$1/sys/devices/$2/sriov_stride" "$6"
	put "$1/sys/devices/$2/sriov_vf_device" "$7"
}

# vf ROOT PFPATH VFBDF INDEX: VF function next to its PF (physfn/virtfnN links, §4).
vf() {
	local root=$1 pfpath=$2 vfbdf=$3 idx=$4
	local parent=${pfpath%/*} pfbdf=${pfpath##*/}
	lnk "../$vfbdf" "$root/sys/devices/$pfpath/virtfn$idx"
	lnk "../$pfbdf" "$root/sys/devices/$parent/$vfbdf/physfn"
}

# netdev ROOT PARENTDIR NAME IFINDEX MAC OPER FLAGS CARRIER SPEED PPN SWID [DEVLINK_MODE]
# PARENTDIR is the device dir below /sys/devices that owns net/NAME. PPN "-"
# = no phys_port_name; SPEED "-" = attribute unreadable (representors);
# DEVLINK_MODE = the legacy compat/devlink/mode file (§4, DPDK mlx5.rst).
netdev() {
	local root=$1 parent=$2 name=$3 ifindex=$4 mac=$5 oper=$6 flags=$7 carrier=$8 speed=$9 ppn=${10} swid=${11} mode=${12:-}
	local d=$root/sys/devices/$parent/net/$name
	put "$d/ifindex" "$ifindex"
	put "$d/address" "$mac"
	put "$d/operstate" "$oper"
	put "$d/flags" "$flags"
	put "$d/carrier" "$carrier"
	put "$d/mtu" 1500
	put "$d/type" 1
	[ "$speed" = - ] || put "$d/speed" "$speed"
	[ "$ppn" = - ] || put "$d/phys_port_name" "$ppn"
	[ "$swid" = - ] || put "$d/phys_switch_id" "$swid"
	[ -z "$mode" ] || put "$d/compat/devlink/mode" "$mode"
	if [[ $parent == pci* ]]; then
		lnk "../../../${parent##*/}" "$d/device"
	fi
	lnk "../../devices/$parent/net/$name" "$root/sys/class/net/$name"
}

# ibdev ROOT PCIPATH NAME GUID NETDEV STATE PHYS RATE: one RDMA device with
# port 1 (§4: "%d: %s" state/phys_state, link_layer, rate "%d%s Gb/sec (%dX%s)").
# gid_attrs/ndevs/N name the port's netdev: rdmamap's netdev->device map
# reads exactly these (lab-notes.md). infiniband/NAME is a real directory
# and /sys/class/infiniband/NAME a symlink, as rdmamap expects.
ibdev() {
	local root=$1 pcipath=$2 name=$3 guid=$4 nd=$5 state=$6 phys=$7 rate=$8
	local d=$root/sys/devices/$pcipath/infiniband/$name
	put "$d/node_guid" "$guid"
	put "$d/node_type" "1: CA"
	put "$d/ports/1/state" "$state"
	put "$d/ports/1/phys_state" "$phys"
	put "$d/ports/1/link_layer" Ethernet
	put "$d/ports/1/rate" "$rate"
	put "$d/ports/1/gid_attrs/ndevs/0" "$nd"
	put "$d/ports/1/gid_attrs/ndevs/1" "$nd"
	lnk "../../../${pcipath##*/}" "$d/device"
	lnk "../../devices/$pcipath/infiniband/$name" "$root/sys/class/infiniband/$name"
}

# sfdev ROOT PCIPATH ID SFNUM: a scalable function, the auxiliary device
# mlx5_core.sf.ID under its parent PCI function (auxiliary.c names it
# "%s.%s.%d" = module.devname.id; sf/dev/dev.c: devname "sf", parent the PF,
# attribute sfnum "%u"), bound to the mlx5_core.sf driver ("%s.%s" =
# module.drvname), /sys/bus/auxiliary/devices/NAME linking to it, its
# subsystem link the auxiliary bus (§11.2). Its netdev and RDMA device
# hang off it: netdev ROOT PCIPATH/mlx5_core.sf.ID ..., ibdev likewise.
sfdev() {
	local root=$1 pcipath=$2 id=$3 sfnum=$4
	local name=mlx5_core.sf.$id
	local d=$root/sys/devices/$pcipath/$name
	put "$d/sfnum" "$sfnum"
	mkdir -p "$root/sys/bus/auxiliary/drivers/mlx5_core.sf"
	: >"$root/sys/bus/auxiliary/drivers/mlx5_core.sf/bind"
	: >"$root/sys/bus/auxiliary/drivers/mlx5_core.sf/unbind"
	local up; up=$(echo "$pcipath/$name" | awk -F/ '{s=""; for(i=0;i<NF+1;i++) s=s"../"; print s}')
	lnk "${up}bus/auxiliary/drivers/mlx5_core.sf" "$d/driver"
	lnk "${up}bus/auxiliary" "$d/subsystem"
	lnk "../../../devices/$pcipath/$name" "$root/sys/bus/auxiliary/devices/$name"
}

# bond ROOT NAME IFINDEX MAC SLAVEPATH...: a bonding master in 802.3ad
# mode over the netdevs at SLAVEPATH (PARENTDIR/net/NAME below
# /sys/devices), as the bonding driver shows it (bond_sysfs.c:
# bonding/slaves "p0 p1", mode/xmit_hash_policy/lacp_rate "%s %d",
# miimon "%d"; bond_sysfs_slave.c: <slave>/bonding_slave/*; net/core/dev.c
# netdev adjacency: <slave>/master and <slave>/upper_NAME -> the bond,
# <bond>/lower_<slave> -> the slave). Slaves carry IFF_SLAVE (flags
# 0x1803), the master IFF_MASTER (0x1403); in 802.3ad every slave takes the
# bond's MAC and keeps its own in bonding_slave/perm_hwaddr (the caller
# writes the slaves' netdevs with the bond MAC and passes PERM via PERMS).
bond() {
	local root=$1 name=$2 ifindex=$3 mac=$4; shift 4
	netdev "$root" virtual "$name" "$ifindex" "$mac" up 0x1403 1 50000 - -
	local d=$root/sys/devices/virtual/net/$name names=() i=0
	for sp in "$@"; do
		local s=${sp##*/} sd=$root/sys/devices/$sp depth
		names+=("$s")
		depth=$(echo "$sp" | awk -F/ '{print NF}')
		lnk "$(printf '../%.0s' $(seq "$depth"))virtual/net/$name" "$sd/master"
		lnk "$(printf '../%.0s' $(seq "$depth"))virtual/net/$name" "$sd/upper_$name"
		lnk "../../../$sp" "$d/lower_$s"
		put "$sd/bonding_slave/state" active
		put "$sd/bonding_slave/mii_status" up
		put "$sd/bonding_slave/link_failure_count" 0
		put "$sd/bonding_slave/perm_hwaddr" "${PERMS[$i]}"
		put "$sd/bonding_slave/queue_id" 0
		put "$sd/bonding_slave/ad_aggregator_id" 1
		i=$((i + 1))
	done
	put "$d/bonding/slaves" "${names[*]}"
	put "$d/bonding/mode" "802.3ad 4"
	put "$d/bonding/miimon" 100
	put "$d/bonding/mii_status" up
	put "$d/bonding/xmit_hash_policy" "layer3+4 1"
	put "$d/bonding/lacp_rate" "slow 0"
	put "$root/sys/class/net/bonding_masters" "$name"
}

loopback() { netdev "$1" virtual lo 1 00:00:00:00:00:00 unknown 0x9 1 - - -; }

UP=0x1003    # IFF_UP|IFF_BROADCAST|IFF_MULTICAST
DOWN=0x1002  # admin down
SLAVE=0x1803 # UP plus IFF_SLAVE (a bond's slave)

# ---------------------------------------------------------------- bf2-dpu-arm
# BlueField-2 Arm side in DPU mode (§3): uplinks p0/p1 and host-PF
# representors pf0hpf/pf1hpf on 0000:03:00.0/.1, RDMA mlx5_0/mlx5_1, eSwitch
# in switchdev ("switchdev mode is configured by default for all PFs on the
# Arm"), tmfifo_net0 (Arm MAC 00:1a:ca:ff:ff:01) and oob_net0. Kernel
# naming of this BSP: host-PF representors phys_port_name pf0/pf1 (no
# controller prefix). The BSP's one SF per port (§3: mlnx-sf.conf): SF
# representors en3f0pf0sf0/en3f1pf1sf0 (pf0sf0/pf1sf0) on the PFs, the SFs
# themselves mlx5_core.sf.2/.3 (sfnum 0) with netdevs enp3s0f0s0/enp3s0f1s0
# and RDMA devices mlx5_2/mlx5_3; these SF netdevs report phys_port_name
# p0/p1 like the uplinks (seen on BlueField images, §10 trap 9, §11.4).
# Two host VFs on PF0: VF representors pf0vf0/pf0vf1 (§3, §12). p0 and p1
# are slaves of bond0 (802.3ad, miimon 100, layer3+4: NVIDIA's BlueField
# LAG procedure), so p1 carries the bond's MAC (p0's); see README.md on
# what this bond is and is not.
R=bf2-dpu-arm; rm -rf "$R"; mkdir -p "$R"
P0=pci0000:00/0000:00:00.0/0000:01:00.0/0000:02:00.0/0000:03:00.0
P1=pci0000:00/0000:00:00.0/0000:01:00.0/0000:02:00.0/0000:03:00.1
pcifn $R $P0 0000:03:00.0 0xa2d6 0x01 -1 "16.0 GT/s PCIe" 16 "16.0 GT/s PCIe" 16 0x020000
pcifn $R $P1 0000:03:00.1 0xa2d6 0x01 -1 "16.0 GT/s PCIe" 16 "16.0 GT/s PCIe" 16 0x020000
sriov $R $P0 0 127 2 1 101e; sriov $R $P1 0 127 128 1 101e
SW=cc1d5e0003a1420c
netdev $R $P0 p0 4 0c:42:a1:5e:1d:cc up $SLAVE 1 25000 p0 $SW switchdev
netdev $R $P0 pf0hpf 6 ba:65:0c:43:b6:1f up $UP 1 - pf0 $SW
netdev $R $P0 en3f0pf0sf0 8 2e:71:8a:4d:05:c3 up $UP 1 - pf0sf0 $SW
netdev $R $P0 pf0vf0 12 6a:3e:91:0c:d2:10 up $UP 1 - pf0vf0 $SW
netdev $R $P0 pf0vf1 13 6a:3e:91:0c:d2:11 up $UP 1 - pf0vf1 $SW
netdev $R $P1 p1 5 0c:42:a1:5e:1d:cc up $SLAVE 1 25000 p1 $SW switchdev
netdev $R $P1 pf1hpf 7 5e:0b:ff:1a:57:31 up $UP 1 - pf1 $SW
netdev $R $P1 en3f1pf1sf0 9 ae:0f:6b:92:34:d8 up $UP 1 - pf1sf0 $SW
sfdev $R $P0 2 0; sfdev $R $P1 3 0
netdev $R $P0/mlx5_core.sf.2 enp3s0f0s0 10 02:8f:2a:11:6e:01 up $UP 1 - p0 -
netdev $R $P1/mlx5_core.sf.3 enp3s0f1s0 11 02:8f:2a:11:6e:02 up $UP 1 - p1 -
ibdev $R $P0 mlx5_0 0c42:a103:005e:1dcc p0 "4: ACTIVE" "5: LinkUp" "25 Gb/sec (1X EDR)"
ibdev $R $P1 mlx5_1 0c42:a103:005e:1dcd p1 "4: ACTIVE" "5: LinkUp" "25 Gb/sec (1X EDR)"
ibdev $R $P0/mlx5_core.sf.2 mlx5_2 008f:2aff:fe11:6e01 enp3s0f0s0 "4: ACTIVE" "5: LinkUp" "25 Gb/sec (1X EDR)"
ibdev $R $P1/mlx5_core.sf.3 mlx5_3 008f:2aff:fe11:6e02 enp3s0f1s0 "4: ACTIVE" "5: LinkUp" "25 Gb/sec (1X EDR)"
PERMS=(0c:42:a1:5e:1d:cc 0c:42:a1:5e:1d:cd)
bond $R bond0 14 0c:42:a1:5e:1d:cc $P0/net/p0 $P1/net/p1
netdev $R platform/MLNXBF01:00/virtio1 tmfifo_net0 3 00:1a:ca:ff:ff:01 up $UP 1 - - -
netdev $R platform/MLNXBF17:00 oob_net0 2 0c:42:a1:5e:1d:d0 up $UP 1 1000 - -
loopback $R

# ------------------------------------------------------------------- bf2-host
# The same kind of BlueField-2 seen from the x86 host (§2.1 Proxmox sample:
# 0000:e1:00.0, mt41686_pciconf0, rev 01): two host PFs in legacy eSwitch
# mode (host PFs "operate in legacy mode only"), names from phys_port_name
# (enp225s0f0np0), the RShim PCIe function c2d3 (§2.4), host tmfifo_net0
# (02:02:02:02:02:02, §3). Port 1 is admin-up with no physical link
# (phys_state "2: Polling"): the rdma step's "cable" case.
R=bf2-host; rm -rf "$R"; mkdir -p "$R"
H0=pci0000:e0/0000:e0:03.1/0000:e1:00.0
H1=pci0000:e0/0000:e0:03.1/0000:e1:00.1
H2=pci0000:e0/0000:e0:03.1/0000:e1:00.2
pcifn $R $H0 0000:e1:00.0 0xa2d6 0x01 1 "16.0 GT/s PCIe" 16 "16.0 GT/s PCIe" 16 0x020000
pcifn $R $H1 0000:e1:00.1 0xa2d6 0x01 1 "16.0 GT/s PCIe" 16 "16.0 GT/s PCIe" 16 0x020000
pcifn $R $H2 0000:e1:00.2 0xc2d3 0x01 1 "16.0 GT/s PCIe" 16 "16.0 GT/s PCIe" 16 0x080100
rm -f "$R/sys/devices/$H2/driver" # rshim is driven from user space (rshim-user-space)
sriov $R $H0 0 8 2 1 101e; sriov $R $H1 0 8 9 1 101e
SW=d01d5e0003a1420c
netdev $R $H0 enp225s0f0np0 4 0c:42:a1:5e:1d:ce up $UP 1 25000 p0 $SW legacy
netdev $R $H1 enp225s0f1np1 5 0c:42:a1:5e:1d:cf down $UP 0 -1 p1 $SW legacy
ibdev $R $H0 mlx5_0 0c42:a103:005e:1dce enp225s0f0np0 "4: ACTIVE" "5: LinkUp" "25 Gb/sec (1X EDR)"
ibdev $R $H1 mlx5_1 0c42:a103:005e:1dcf enp225s0f1np1 "1: DOWN" "2: Polling" "10 Gb/sec (4X SDR)"
netdev $R virtual tmfifo_net0 6 02:02:02:02:02:02 unknown $UP 1 10 - -
loopback $R

# ---------------------------------------------------------------- bf3-dpu-arm
# BlueField-3 Arm side, DPU mode, after the §2.2 sigcomm26 sample
# (BlueField3(rev:1), 03:00.0/.1, mlx5_0/1, NUMA -1, NET p0,pf0hpf,en3f0pf0sf0),
# MACs f0:fb:7f:e2:e2:76/77 (§3), SF representors pf0sf0 (§3, §4). A newer
# kernel's naming: the host PFs are an external controller, so their
# representors report phys_port_name c1pf0/c1pf1 (net/devlink/port.c
# __devlink_port_phys_port_name_get, "c%u" prefix when external; §11.4),
# which NVIDIA's udev rule still names pf0hpf/pf1hpf (§11.3). The SFs of
# the 3rd-party BF3 setup (§3): mlx5_core.sf.2/.3 (sfnum 0), netdevs
# enp3s0f0s0/enp3s0f1s0, RDMA mlx5_2/mlx5_3; as the upstream driver
# registers them (devlink port flavour virtual) they have no
# phys_port_name and no phys_switch_id (§11.4).
R=bf3-dpu-arm; rm -rf "$R"; mkdir -p "$R"
P0=pci0000:00/0000:00:00.0/0000:01:00.0/0000:02:00.0/0000:03:00.0
P1=pci0000:00/0000:00:00.0/0000:01:00.0/0000:02:00.0/0000:03:00.1
pcifn $R $P0 0000:03:00.0 0xa2dc 0x01 -1 "32.0 GT/s PCIe" 16 "32.0 GT/s PCIe" 16 0x020000
pcifn $R $P1 0000:03:00.1 0xa2dc 0x01 -1 "32.0 GT/s PCIe" 16 "32.0 GT/s PCIe" 16 0x020000
sriov $R $P0 0 127 2 1 101e; sriov $R $P1 0 127 128 1 101e
SW=76e2e20003fffbf0
netdev $R $P0 p0 4 f0:fb:7f:e2:e2:76 up $UP 1 200000 p0 $SW switchdev
netdev $R $P0 pf0hpf 8 4a:c1:0d:8e:33:01 up $UP 1 - c1pf0 $SW
netdev $R $P0 en3f0pf0sf0 10 1e:3d:55:12:a0:4c up $UP 1 - pf0sf0 $SW
netdev $R $P1 p1 5 f0:fb:7f:e2:e2:77 up $UP 1 200000 p1 $SW switchdev
netdev $R $P1 pf1hpf 9 8a:72:1b:5c:90:02 up $UP 1 - c1pf1 $SW
netdev $R $P1 en3f1pf1sf0 11 7a:4e:c3:09:d1:6b up $UP 1 - pf1sf0 $SW
sfdev $R $P0 2 0; sfdev $R $P1 3 0
netdev $R $P0/mlx5_core.sf.2 enp3s0f0s0 12 02:d7:41:9c:3e:01 up $UP 1 - - -
netdev $R $P1/mlx5_core.sf.3 enp3s0f1s0 13 02:d7:41:9c:3e:02 up $UP 1 - - -
ibdev $R $P0 mlx5_0 f0fb:7f03:00e2:e276 p0 "4: ACTIVE" "5: LinkUp" "200 Gb/sec (4X HDR)"
ibdev $R $P1 mlx5_1 f0fb:7f03:00e2:e277 p1 "4: ACTIVE" "5: LinkUp" "200 Gb/sec (4X HDR)"
ibdev $R $P0/mlx5_core.sf.2 mlx5_2 00d7:41ff:fe9c:3e01 enp3s0f0s0 "4: ACTIVE" "5: LinkUp" "200 Gb/sec (4X HDR)"
ibdev $R $P1/mlx5_core.sf.3 mlx5_3 00d7:41ff:fe9c:3e02 enp3s0f1s0 "4: ACTIVE" "5: LinkUp" "200 Gb/sec (4X HDR)"
netdev $R platform/MLNXBF01:00/virtio1 tmfifo_net0 3 00:1a:ca:ff:ff:01 up $UP 1 - - -
netdev $R platform/MLNXBF17:00 oob_net0 2 f0:fb:7f:e2:e2:7e up $UP 1 1000 - -
loopback $R

# ----------------------------------------------------------------- cx6dx-host
# ConnectX-6 Dx (101d, mt4125, ConnectX6DX; §2.4) in an x86 host on NUMA
# node 0, trained at 8.0 GT/s in a 16.0 GT/s-capable link (a Gen3 slot),
# SR-IOV with 2 VFs (101e, physfn/virtfn links §4) on port 0; port 1 is
# admin-down (mlx5 then reports "1: DOWN" / "3: Disabled"). The host runs
# NVIDIA's driver (MLNX_OFED/DOCA-host), so both PF netdevs have the legacy
# compat/devlink/mode file (§4, DPDK mlx5.rst), in legacy mode.
R=cx6dx-host; rm -rf "$R"; mkdir -p "$R"
C0=pci0000:3a/0000:3a:00.0/0000:3b:00.0
C1=pci0000:3a/0000:3a:00.0/0000:3b:00.1
V0=pci0000:3a/0000:3a:00.0/0000:3b:00.2
V1=pci0000:3a/0000:3a:00.0/0000:3b:00.3
pcifn $R $C0 0000:3b:00.0 0x101d 0x00 0 "8.0 GT/s PCIe" 16 "16.0 GT/s PCIe" 16 0x020000
pcifn $R $C1 0000:3b:00.1 0x101d 0x00 0 "8.0 GT/s PCIe" 16 "16.0 GT/s PCIe" 16 0x020000
pcifn $R $V0 0000:3b:00.2 0x101e 0x00 0 "Unknown" 255 "Unknown" 255 0x020000
pcifn $R $V1 0000:3b:00.3 0x101e 0x00 0 "Unknown" 255 "Unknown" 255 0x020000
sriov $R $C0 2 8 2 1 101e; sriov $R $C1 0 8 9 1 101e
vf $R $C0 0000:3b:00.2 0; vf $R $C0 0000:3b:00.3 1
SW=a6c40f0003a14210
netdev $R $C0 enp59s0f0np0 4 10:70:fd:a1:c4:a6 up $UP 1 100000 p0 $SW legacy
netdev $R $C1 enp59s0f1np1 5 10:70:fd:a1:c4:a7 down $DOWN 0 - p1 $SW legacy
netdev $R $V0 enp59s0f0v0 6 6e:1c:25:90:4b:10 up $UP 1 100000 - -
netdev $R $V1 enp59s0f0v1 7 6e:1c:25:90:4b:11 up $UP 1 100000 - -
ibdev $R $C0 mlx5_0 1070:fd03:00a1:c4a6 enp59s0f0np0 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)"
ibdev $R $C1 mlx5_1 1070:fd03:00a1:c4a7 enp59s0f1np1 "1: DOWN" "3: Disabled" "10 Gb/sec (4X SDR)"
ibdev $R $V0 mlx5_2 6e1c:2503:0090:4b10 enp59s0f0v0 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)"
ibdev $R $V1 mlx5_3 6e1c:2503:0090:4b11 enp59s0f0v1 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)"
loopback $R
echo "fixtures written: bf2-dpu-arm bf2-host bf3-dpu-arm cx6dx-host"
