package ovsstep

import (
	"errors"
	"fmt"

	"rig/ovs"
	"rig/provision"
	"rig/smartnic"
)

// The ovs step's part for NVIDIA's OVS-DOCA: a playbook with
// config.doca-init: true says the OvS is OVS-DOCA, and its dpdk ports
// may go without devargs (OVS-DOCA resolves their names, see ovs/doca.go).
// Both are checked before anything is written: the netdevs in sysfs, and
// that the OvS is OVS-DOCA (upstream OvS would take doca-init silently and
// then fail every such port with "'p0' is missing 'options:dpdk-devargs'").

// checkByNames checks, in sysfs, the ports OVS-DOCA will resolve by their
// names (what netdev_doca_generate_devargs reads) and notes what each
// resolves to. It runs after checkDOCA: on an OvS that is not OVS-DOCA
// the names do not matter.
func (s *ovsStep) checkByNames(plan *provision.Plan) error {
	for _, name := range s.byNamePorts() {
		n, err := ovs.ResolveDOCAName(s.h, name)
		var ne *smartnic.NetdevError
		if errors.As(err, &ne) {
			return &provision.Problem{Object: "ovs port " + name, Err: err, CauseText: "sysfs shows " + ne.Cause(), FixText: ne.Fix()}
		} else if err != nil {
			return fmt.Errorf("ovs port %s: %w", name, err)
		}
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: no devargs, OVS-DOCA resolves it by its netdev name: %s", name, n))
	}
	return nil
}

// checkDOCA refuses a playbook that says the OvS is OVS-DOCA on an OvS
// whose database is not OVS-DOCA's. Under a fixture root the database is
// a stand-in, so it only notes what it could not check.
func (s *ovsStep) checkDOCA(st *ovs.State, plan *provision.Plan) error {
	if !s.spec.DOCA() {
		return nil
	}
	if s.fixture != "" {
		plan.Notes = append(plan.Notes, "ovs: config.doca-init: true says this OvS is NVIDIA's OVS-DOCA; not checked against a fixture root (no database)")
		return nil
	}
	if st.DOCA {
		return nil
	}
	names := s.byNamePorts()
	why := "the playbook sets ovs.config.doca-init: true, which only NVIDIA's OVS-DOCA knows"
	if len(names) > 0 {
		why += fmt.Sprintf(", and ports %v have no devargs, which only OVS-DOCA resolves (upstream OvS fails each with \"'%s' is missing 'options:dpdk-devargs'\")", names, names[0])
	}
	return &provision.Problem{Object: "ovs", Err: errors.New("this Open vSwitch is not NVIDIA's OVS-DOCA: its database has no doca_initialized column"),
		CauseText: why,
		FixText: "run the playbook on a host with OVS-DOCA (DOCA's openvswitch packages; on a BlueField /etc/mellanox/mlnx-ovs.conf OVS_DOCA=\"yes\"); " +
			"for upstream Open vSwitch drop doca-init, set dpdk-init: try and give each dpdk port devargs or netdev: NAME"}
}

// byNamePorts lists the ports without devargs or netdev.
func (s *ovsStep) byNamePorts() []string {
	var out []string
	for _, b := range s.spec.Bridges {
		for _, p := range b.Ports {
			if p.ByNetdevName() {
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// dpdkRequested: other_config asks ovs-vswitchd for DPDK, with dpdk-init
// or (OVS-DOCA, which starts DPDK with DOCA) doca-init.
func dpdkRequested(st *ovs.State) bool {
	init := st.OtherConfig["dpdk-init"]
	return init == "true" || init == "try" || (st.DOCA && st.OtherConfig["doca-init"] == "true")
}
