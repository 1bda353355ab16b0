package mlxconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Query is one device's `mstconfig [-e] -d DEV q [PARAMS]` (or `set`) output.
//
// Format (mstflint mlxconfig/mlxcfg_ui.cpp printOpening, printConfHeader,
// printSingleParam; hardware-formats.md §1.4): a "Device #1:" block with
// "%-16s%-16s" (later builds "%-20s%-20s") lines Device type/Name/
// Description/Device, a "Configurations:" header naming the columns
// (Default and Current only with -e, New only for set), then one row per
// parameter: "%s%s     %-44s" (diff '*' or ' ', 'RO' or two spaces, name;
// older builds "*        %-36s" without RO, the newest %-48s) followed by
// the values in fixed-width columns (16 wide in the builds real BlueField
// hosts run, see lab/fwsim/testdata; 20 and wider later). Rows are split
// on whitespace after the prefix, so every layout parses.
type Query struct {
	DeviceType  string `json:"deviceType"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Device      string `json:"device"`

	HasDefault bool `json:"hasDefault"`
	HasCurrent bool `json:"hasCurrent"`
	HasNext    bool `json:"hasNext"`
	HasNew     bool `json:"hasNew"`

	Params []Param `json:"params"`
	// Errors are the tool's "-E- ..." lines (without the prefix).
	Errors []string `json:"errors,omitempty"`
	// Info holds the tool's "Device Firmware does not support reading
	// default/current configurations" line (mlxcfg_ui.cpp
	// DEFAULT_CURRENT_NOT_SUPPORTED_PREFIX): why a -e column is missing.
	Info []string `json:"info,omitempty"`
}

// Param is one configuration row.
type Param struct {
	Name     string `json:"name"`
	Modified bool   `json:"modified"` // '*': next differs from default or current
	ReadOnly bool   `json:"readOnly"` // 'RO': this host cannot write it
	Default  Value  `json:"default"`
	Current  Value  `json:"current"`
	Next     Value  `json:"next"`
	New      Value  `json:"new"`
	// Unreadable: the row names a parameter but its values do not fill
	// the table's columns (a value the tool printed blank or with spaces,
	// or none at all): the parameter is present, its values are not read
	// (each present column holds UnreadableText, NA).
	Unreadable bool   `json:"unreadable,omitempty"`
	Raw        string `json:"raw,omitempty"` // the row as printed, when Unreadable
}

// UnreadableText is the Text of a value in an Unreadable row.
const UnreadableText = "(unreadable)"

// UnreadWhy says why the value v of row p was not read: "present,
// pending, unreadable" for a row marked '*' whose values cannot be read or
// are N/A (it exists, and its next value differs: a change is pending),
// "present, unreadable" for an Unreadable row without the '*', else what
// the tool printed (e.g. "N/A").
func (p Param) UnreadWhy(v Value) string {
	switch {
	case (p.Unreadable || v.NA) && p.Modified:
		return "present, pending, unreadable"
	case p.Unreadable:
		return "present, unreadable"
	}
	return fmt.Sprintf("printed %q", v.Text)
}

// Value is one printed value: NAME(n), a bare number, Array[a..b] or N/A.
type Value struct {
	Present bool   `json:"present"` // the column exists in this output
	Text    string `json:"text"`    // as printed
	Name    string `json:"name,omitempty"`
	Num     int64  `json:"num"`
	HasNum  bool   `json:"hasNum"`
	NA      bool   `json:"na,omitempty"`
	Array   bool   `json:"array,omitempty"`
}

func (v Value) String() string { return v.Text }

// Equal reports whether v holds the integer n.
func (v Value) Equal(n int64) bool { return v.Present && v.HasNum && v.Num == n }

var (
	reNamed = regexp.MustCompile(`^([A-Za-z0-9_]+)\((-?[0-9]+)\)$`)
	reArray = regexp.MustCompile(`^Array\[[0-9]+\.\.[0-9]+\]$`)
	reName  = regexp.MustCompile(`^[A-Z][A-Z0-9_]*(\[[0-9]+\])?$`)
)

// ParseValue parses one printed value.
func ParseValue(s string) Value {
	v := Value{Present: true, Text: s}
	switch {
	case s == "N/A":
		v.NA = true
	case reArray.MatchString(s):
		v.Array = true
	default:
		if m := reNamed.FindStringSubmatch(s); m != nil {
			if n, err := strconv.ParseInt(m[2], 10, 64); err == nil {
				v.Name, v.Num, v.HasNum = m[1], n, true
			}
		} else if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			v.Num, v.HasNum = n, true
		}
	}
	return v
}

// Param returns the row for name.
func (q *Query) Param(name string) (Param, bool) {
	for _, p := range q.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// ParseQuery parses the text of `mstconfig [-e] -d DEV q ...` (first device
// only). It fails when there is no "Configurations:" header, which is what
// the tool prints before any row; "-E-" lines are kept in Errors.
func ParseQuery(out string) (*Query, error) {
	q := &Query{}
	inDevice, inConf := false, false
	var cols []string
	for _, raw := range strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n") {
		line := strings.TrimRight(raw, " \t")
		trim := strings.TrimSpace(line)
		switch {
		case trim == "":
			continue
		case strings.HasPrefix(trim, "-E-"):
			q.Errors = append(q.Errors, strings.TrimSpace(strings.TrimPrefix(trim, "-E-")))
			continue
		case strings.HasPrefix(trim, "Device Firmware does not support reading"):
			q.Info = append(q.Info, trim)
			continue
		case strings.HasPrefix(trim, "Device #"):
			if inDevice {
				// only the first device is described
				return finish(q, cols)
			}
			inDevice = true
			continue
		}
		if !inConf {
			if k, v, ok := headerField(trim); ok {
				switch k {
				case "Device type:":
					q.DeviceType = v
				case "Name:":
					q.Name = v
				case "Description:":
					q.Description = v
				case "Device:", "PCI device:":
					q.Device = v
				}
				continue
			}
			if strings.HasPrefix(trim, "Configurations:") {
				inConf = true
				cols = headerColumns(strings.TrimPrefix(trim, "Configurations:"))
				for _, c := range cols {
					switch c {
					case "Default":
						q.HasDefault = true
					case "Current":
						q.HasCurrent = true
					case "Next Boot":
						q.HasNext = true
					case "New":
						q.HasNew = true
					}
				}
			}
			continue
		}
		if p, ok := parseRow(line, cols); ok {
			q.Params = append(q.Params, p)
		}
	}
	return finish(q, cols)
}

func finish(q *Query, cols []string) (*Query, error) {
	if cols == nil {
		if len(q.Errors) > 0 {
			return q, fmt.Errorf("mlxconfig output has no Configurations table: %s", strings.Join(q.Errors, "; "))
		}
		return q, fmt.Errorf("mlxconfig output has no Configurations table")
	}
	return q, nil
}

func headerField(trim string) (key, val string, ok bool) {
	for _, k := range []string{"Device type:", "Name:", "Description:", "Device:", "PCI device:"} {
		if strings.HasPrefix(trim, k) {
			return k, strings.TrimSpace(strings.TrimPrefix(trim, k)), true
		}
	}
	return "", "", false
}

// headerColumns lists the value columns named in the header, in order.
func headerColumns(rest string) []string {
	cols := []string{}
	f := strings.Fields(rest)
	for i := 0; i < len(f); i++ {
		switch {
		case f[i] == "Next" && i+1 < len(f) && f[i+1] == "Boot":
			cols = append(cols, "Next Boot")
			i++
		case f[i] == "Default", f[i] == "Current", f[i] == "New":
			cols = append(cols, f[i])
		}
	}
	return cols
}

// parseRow parses "<*| ><RO|  >     NAME  v1  v2 ...". The prefix is
// stripped by meaning, not by column (column widths changed between
// mstflint versions; hardware-formats.md §10.5).
func parseRow(line string, cols []string) (Param, bool) {
	var p Param
	rest := line
	if strings.HasPrefix(rest, "*") {
		p.Modified = true
		rest = rest[1:]
	}
	rest = strings.TrimLeft(rest, " \t")
	if strings.HasPrefix(rest, "RO") && len(rest) > 2 && (rest[2] == ' ' || rest[2] == '\t') {
		p.ReadOnly = true
		rest = rest[2:]
	}
	f := strings.Fields(rest)
	if len(f) < 1 || !reName.MatchString(f[0]) {
		return Param{}, false
	}
	p.Name = f[0]
	if len(f)-1 != len(cols) {
		if len(f) == 1 && !p.Modified && !p.ReadOnly && !strings.HasPrefix(line, " ") {
			return Param{}, false // a bare word at the line's start is no row
		}
		p.Unreadable, p.Raw = true, strings.TrimSpace(line)
		na := Value{Present: true, Text: UnreadableText, NA: true}
		for _, c := range cols {
			p.setColumn(c, na)
		}
		return p, true
	}
	for i, c := range cols {
		p.setColumn(c, ParseValue(f[i+1]))
	}
	return p, true
}

// setColumn sets the value of the query table's column col (Default,
// Current, Next Boot, New); other columns are not kept.
func (p *Param) setColumn(col string, v Value) {
	switch col {
	case "Default":
		p.Default = v
	case "Current":
		p.Current = v
	case "Next Boot":
		p.Next = v
	case "New":
		p.New = v
	}
}
