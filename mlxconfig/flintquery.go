package mlxconfig

import (
	"fmt"
	"strings"
)

// FlintQuery is `mstflint -d <bdf> q` (Mellanox/mstflint
// flint/subcommands.cpp QuerySubCommand::printInfo, v4.36.0-1;
// hardware-formats.md §20.2): "Label:" left-justified to 23 columns, then
// the value; a value of several lines (Rom Info's ROMs) continues on lines
// indented to the value column.
//
// FW Version is the flash (next-boot) image, not the one running:
// "FW Version(Running):" is printed only when a running version is known
// and differs. Scripts that read FW Version alone read the burned
// version (the bfb-build running_nic_fw trap).
type FlintQuery struct {
	ImageType string `json:"imageType"`
	// FlashVersion is "FW Version:", the image on flash.
	FlashVersion FWVersion `json:"flashVersion"`
	// RunningVersion is "FW Version(Running):"; zero when not printed
	// (the running version is the flash image's).
	RunningVersion FWVersion `json:"runningVersion"`
	ReleaseDate    string    `json:"releaseDate,omitempty"` // day.month.year, %x.%x.%x of BCD fields
	ProductVersion string    `json:"productVersion,omitempty"`
	PSID           string    `json:"psid,omitempty"`
	OrigPSID       string    `json:"origPsid,omitempty"`
	Security       string    `json:"securityAttributes,omitempty"`
	// Fields is every label's value as printed (the first, when a label
	// repeats), continuation lines joined with "\n".
	Fields map[string]string `json:"fields"`
}

// ParseFlintQuery parses the output of `mstflint -d DEV q`; dev names the
// device for errors. The tool's "-E- …" lines make an error carrying them.
func ParseFlintQuery(dev, text string) (*FlintQuery, error) {
	q := &FlintQuery{Fields: map[string]string{}}
	last := ""
	var errs []string
	for i, raw := range strings.Split(text, "\n") {
		raw = strings.TrimRight(raw, "\r ")
		switch {
		case strings.TrimSpace(raw) == "":
			continue
		case strings.HasPrefix(raw, "-E-"):
			errs = append(errs, strings.TrimSpace(strings.TrimPrefix(raw, "-E-")))
			continue
		case raw[0] == ' ' || raw[0] == '\t':
			if last == "" {
				return q, fmt.Errorf("mstflint -d %s q line %d: %q continues no label", dev, i+1, strings.TrimSpace(raw))
			}
			q.Fields[last] += "\n" + strings.TrimSpace(raw)
			continue
		}
		label, val, ok := strings.Cut(raw, ":")
		if !ok {
			return q, fmt.Errorf("mstflint -d %s q line %d: %q is not a \"Label: value\" line; is this mstflint's query output?", dev, i+1, raw)
		}
		last = ""
		if _, dup := q.Fields[label]; !dup {
			q.Fields[label], last = strings.TrimSpace(val), label
		}
	}
	if len(errs) > 0 {
		return q, fmt.Errorf("mstflint -d %s q: %s", dev, strings.Join(errs, "; "))
	}
	return q, q.typed(dev)
}

// typed fills the typed fields from Fields.
func (q *FlintQuery) typed(dev string) error {
	v, ok := q.Fields["FW Version"]
	if !ok {
		return fmt.Errorf("mstflint -d %s q: no \"FW Version:\" line; run it as root on the PF (mstflint -d <PF bdf> q) and check that the output is the query's", dev)
	}
	var err error
	if q.FlashVersion, err = ParseFWVersion(v); err != nil {
		return fmt.Errorf("mstflint -d %s q: FW Version: %w", dev, err)
	}
	if r, ok := q.Fields["FW Version(Running)"]; ok {
		if q.RunningVersion, err = ParseFWVersion(r); err != nil {
			return fmt.Errorf("mstflint -d %s q: FW Version(Running): %w", dev, err)
		}
	}
	q.ImageType = q.Fields["Image type"]
	q.ReleaseDate = q.Fields["FW Release Date"]
	q.ProductVersion = q.Fields["Product Version"]
	q.PSID = q.Fields["PSID"]
	q.OrigPSID = q.Fields["Orig PSID"]
	q.Security = q.Fields["Security Attributes"]
	return nil
}

// Firmware is the query's firmware: running is "FW Version(Running):"
// when printed, else "FW Version:"; stored is "FW Version:".
func (q *FlintQuery) Firmware(dev string) Firmware {
	f := Firmware{Device: dev, Running: q.FlashVersion, Stored: q.FlashVersion, PSID: q.PSID, Source: "mstflint q"}
	if !q.RunningVersion.IsZero() {
		f.Running = q.RunningVersion
	}
	return f
}
