package smartnic

import "testing"

// ConnectX-3 and -3 Pro carry their real names, mstflint type names and
// mst names (mt + decimal id), not "unknown Mellanox device".
func TestModelsConnectX3(t *testing.T) {
	for _, tc := range []struct {
		id                  uint16
		name, mstType, kind string
		mst                 string
	}{
		{0x1003, "ConnectX-3", "ConnectX3", FunctionNIC, "mt4099"},
		{0x1007, "ConnectX-3 Pro", "ConnectX3Pro", FunctionNIC, "mt4103"},
		{0x1004, "ConnectX-3/ConnectX-3 Pro VF", "", FunctionVF, "mt4100"},
	} {
		m, ok := LookupModel(tc.id)
		if !ok || m.Name != tc.name || m.MSTType != tc.mstType || m.Kind != tc.kind || m.Family != "ConnectX" || m.IsBlueField() || MSTBase(tc.id) != tc.mst {
			t.Errorf("%04x: %+v %v %s", tc.id, m, ok, MSTBase(tc.id))
		}
	}
	if m, ok := LookupModel(0x1002); ok || m.Name != "unknown Mellanox device 1002" || m.Kind != FunctionOther {
		t.Errorf("1002: %+v %v", m, ok)
	}
	seen := map[uint16]bool{}
	for _, m := range models {
		if seen[m.DeviceID] {
			t.Errorf("%04x listed twice", m.DeviceID)
		}
		seen[m.DeviceID] = true
		if m.MSTType != "" && m.Kind != FunctionNIC {
			t.Errorf("%04x: mstflint type on a %s function", m.DeviceID, m.Kind)
		}
	}
}
