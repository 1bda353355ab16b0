package mlxconfig

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// DevlinkInfo is one device of `devlink dev info` (iproute2 devlink.c
// pr_out_info / pr_out_versions_single; mlx5's keys from
// drivers/net/ethernet/mellanox/mlx5/core/devlink.c mlx5_devlink_info_get;
// hardware-formats.md §20.2):
//
//	pci/0000:08:00.0:
//	  driver mlx5_core
//	  serial_number …            (newer kernels only; first release UNCONFIRMED)
//	  board.serial_number …      (the same)
//	  versions:
//	      fixed:
//	        fw.psid MT_0000000894
//	      running:
//	        fw.version 28.41.1000
//	        fw 28.41.1000         (generic duplicate, kernels since ~2021)
//	      stored:
//	        fw.version 28.41.1000
//	        fw 28.41.1000
type DevlinkInfo struct {
	Handle            string            `json:"handle"` // pci/0000:08:00.0
	Driver            string            `json:"driver"`
	SerialNumber      string            `json:"serialNumber,omitempty"`
	BoardSerialNumber string            `json:"boardSerialNumber,omitempty"`
	Fixed             map[string]string `json:"fixed,omitempty"`
	Running           map[string]string `json:"running,omitempty"`
	Stored            map[string]string `json:"stored,omitempty"`
}

// ParseDevlinkInfo parses the text of `devlink dev info [DEV]`: one block
// per device, a handle line ("pci/0000:08:00.0:") at the left margin and
// its attributes indented below it. Lines are read by what they say, not
// by their indent.
func ParseDevlinkInfo(text string) ([]DevlinkInfo, error) {
	var out []DevlinkInfo
	var cur *DevlinkInfo
	section := ""
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
			continue
		case raw[0] != ' ' && raw[0] != '\t' && strings.HasSuffix(line, ":") && strings.Contains(line, "/"):
			out = append(out, DevlinkInfo{Handle: strings.TrimSuffix(line, ":")})
			cur, section = &out[len(out)-1], ""
			continue
		case cur == nil:
			return out, fmt.Errorf("devlink dev info line %d: %q before any device handle line (pci/<bdf>:); is this `devlink dev info` output?", i+1, line)
		case line == "versions:":
			section = "versions"
			continue
		case section != "" && (line == "fixed:" || line == "running:" || line == "stored:"):
			section = strings.TrimSuffix(line, ":")
			continue
		}
		key, val, ok := strings.Cut(line, " ")
		if !ok || strings.TrimSpace(val) == "" {
			return out, fmt.Errorf("devlink dev info %s line %d: %q: want \"name value\"", cur.Handle, i+1, line)
		}
		if err := cur.set(section, key, strings.TrimSpace(val)); err != nil {
			return out, fmt.Errorf("devlink dev info %s line %d: %w", cur.Handle, i+1, err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("devlink dev info: no device in the output; list the devices with `devlink dev show` and ask for one (devlink dev info pci/<bdf>)")
	}
	return out, nil
}

// set stores one attribute of section ("" for the device's own).
func (d *DevlinkInfo) set(section, key, val string) error {
	put := func(m *map[string]string) error {
		if *m == nil {
			*m = map[string]string{}
		}
		if _, dup := (*m)[key]; dup {
			return fmt.Errorf("%s %s printed twice", section, key)
		}
		(*m)[key] = val
		return nil
	}
	switch section {
	case "fixed":
		return put(&d.Fixed)
	case "running":
		return put(&d.Running)
	case "stored":
		return put(&d.Stored)
	case "versions":
		return fmt.Errorf("%q under versions: outside fixed/running/stored", key+" "+val)
	}
	switch key {
	case "driver":
		d.Driver = val
	case "serial_number":
		d.SerialNumber = val
	case "board.serial_number":
		d.BoardSerialNumber = val
	}
	return nil
}

// devlinkJSON is `devlink -j dev info`: {"info":{"pci/<bdf>":{"driver":…,
// "versions":{"fixed":{…},"running":{…},"stored":{…}}}}} (§20.2).
type devlinkJSON struct {
	Info map[string]struct {
		Driver            string `json:"driver"`
		SerialNumber      string `json:"serial_number"`
		BoardSerialNumber string `json:"board.serial_number"`
		Versions          struct {
			Fixed   map[string]string `json:"fixed"`
			Running map[string]string `json:"running"`
			Stored  map[string]string `json:"stored"`
		} `json:"versions"`
	} `json:"info"`
}

// ParseDevlinkInfoJSON parses `devlink -j dev info [DEV]`, devices in
// handle order.
func ParseDevlinkInfoJSON(b []byte) ([]DevlinkInfo, error) {
	var j devlinkJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("devlink -j dev info: %w; is this devlink's JSON (iproute2 with -j)?", err)
	}
	if len(j.Info) == 0 {
		return nil, fmt.Errorf("devlink -j dev info: no \"info\" object with a device; ask for one device (devlink -j dev info pci/<bdf>)")
	}
	var out []DevlinkInfo
	for h, d := range j.Info {
		out = append(out, DevlinkInfo{Handle: h, Driver: d.Driver, SerialNumber: d.SerialNumber, BoardSerialNumber: d.BoardSerialNumber,
			Fixed: d.Versions.Fixed, Running: d.Versions.Running, Stored: d.Versions.Stored})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Handle < out[b].Handle })
	return out, nil
}

// Firmware is the device's firmware: fw.version running and stored (the
// generic "fw" key when a kernel prints only it), fw.psid.
func (d DevlinkInfo) Firmware() (Firmware, error) {
	f := Firmware{Device: d.Handle, PSID: d.Fixed["fw.psid"], Source: "devlink dev info"}
	run, ok := fwKey(d.Running)
	if !ok {
		return f, fmt.Errorf("devlink dev info %s: no running fw.version; newer mlx5 kernels report versions for PFs only (not VFs or SFs): ask the PF (devlink dev info pci/<PF bdf>)", d.Handle)
	}
	var err error
	if f.Running, err = ParseFWVersion(run); err != nil {
		return f, fmt.Errorf("devlink dev info %s: running: %w", d.Handle, err)
	}
	if st, ok := fwKey(d.Stored); ok {
		if f.Stored, err = ParseFWVersion(st); err != nil {
			return f, fmt.Errorf("devlink dev info %s: stored: %w", d.Handle, err)
		}
	}
	return f, nil
}

func fwKey(m map[string]string) (string, bool) {
	if v, ok := m["fw.version"]; ok {
		return v, true
	}
	v, ok := m["fw"]
	return v, ok
}
