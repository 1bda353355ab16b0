package card

import (
	"path/filepath"
	"strings"
)

// Scalable functions and bonds, written as mkhosts.sh's sfdev and bond
// write them (formats and sources: testdata/hosts/README.md).

// sfdev writes an SF's auxiliary device: sfnum, its driver (mlx5_core.sf)
// and subsystem (the auxiliary bus) links, /sys/bus/auxiliary/devices/NAME.
func (t *tree) sfdev(sf SF) {
	d := "sys/devices/" + sf.Path
	name := filepath.Base(sf.Path)
	t.put(d+"/sfnum", sf.SFNum)
	t.write("sys/bus/auxiliary/drivers/mlx5_core.sf/bind", "")
	t.write("sys/bus/auxiliary/drivers/mlx5_core.sf/unbind", "")
	up := strings.Repeat("../", strings.Count(sf.Path, "/")+2)
	t.lnk(up+"bus/auxiliary/drivers/mlx5_core.sf", d+"/driver")
	t.lnk(up+"bus/auxiliary", d+"/subsystem")
	t.lnk("../../../devices/"+sf.Path, "sys/bus/auxiliary/devices/"+name)
}

// bond writes a bonding master's bonding/ attributes and the adjacency
// links between it and its slaves (master, upper_NAME, lower_SLAVE) and
// each slave's bonding_slave/. Links are relative as sysfs makes them; in
// a lab tree they resolve from /sys/devices/virtual/net/<name>, where the
// lab binds every card netdev (as the device links do).
func (t *tree) bond(c Card, m Netdev, lab bool) {
	d := "sys/devices/" + m.Parent + "/net/" + m.Name
	var names []string
	for _, s := range c.Netdevs {
		if s.Master != m.Name {
			continue
		}
		names = append(names, s.Name)
		perm := s.PermMAC
		if perm == "" {
			perm = s.MAC
		}
		sd := "sys/devices/" + s.Parent + "/net/" + s.Name
		toMaster := strings.Repeat("../", strings.Count(s.Parent, "/")+3) + m.Parent + "/net/" + m.Name
		toSlave := strings.Repeat("../", strings.Count(m.Parent, "/")+3) + s.Parent + "/net/" + s.Name
		if lab {
			toMaster, toSlave = "../"+m.Name, "../"+s.Name
		}
		t.lnk(toMaster, sd+"/master")
		t.lnk(toMaster, sd+"/upper_"+m.Name)
		t.lnk(toSlave, d+"/lower_"+s.Name)
		for _, kv := range [][2]string{{"state", "active"}, {"mii_status", "up"}, {"link_failure_count", "0"},
			{"perm_hwaddr", perm}, {"queue_id", "0"}, {"ad_aggregator_id", "1"}} {
			t.put(sd+"/bonding_slave/"+kv[0], kv[1])
		}
	}
	for _, kv := range [][2]string{{"slaves", strings.Join(names, " ")}, {"mode", m.Bond.Mode}, {"miimon", m.Bond.Miimon},
		{"mii_status", "up"}, {"xmit_hash_policy", m.Bond.XmitHash}, {"lacp_rate", m.Bond.LACPRate}} {
		t.put(d+"/bonding/"+kv[0], kv[1])
	}
	if !lab {
		t.put("sys/class/net/bonding_masters", m.Name)
	}
}
