// Package devargs is DPDK's device-argument string, one home for every
// part of rig that reads or writes one: "<device>[,key=value...]", where
// the device is a PCI address (0000:03:00.0) or a vdev name (net_null0)
// and a value may hold a bracketed list with commas of its own
// ("representor=[0,65535]", rte_devargs_parse and rte_kvargs split at the
// commas outside brackets only).
package devargs

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"rig/internal/pci"
)

// Opt is one key=value option, as written.
type Opt struct {
	Key, Value string
}

// Devargs is a parsed devargs string: the device and its options in the
// order given.
type Devargs struct {
	Device string
	Opts   []Opt
}

// keyRE is what DPDK's kvargs accept as a key, and a vdev name.
var keyRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Split cuts s at the commas outside brackets: the device first, then its
// options, each as written. It never fails; Parse and Check say what is
// wrong with a string.
func Split(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// balanced says whether every '[' closes before its ']' and all close.
func balanced(s string) error {
	depth := 0
	for _, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			if depth--; depth < 0 {
				return errors.New("unbalanced ']'")
			}
		}
	}
	if depth != 0 {
		return errors.New("unbalanced '['")
	}
	return nil
}

// Parse reads s strictly: brackets balanced, a device before the first
// comma, every option key=value with a key DPDK's kvargs accept. Keys may
// repeat (DPDK keeps each).
func Parse(s string) (Devargs, error) {
	if s == "" {
		return Devargs{}, errors.New("empty")
	}
	if err := balanced(s); err != nil {
		return Devargs{}, err
	}
	parts := Split(s)
	d := Devargs{Device: parts[0]}
	if d.Device == "" {
		return Devargs{}, errors.New("no device name before the first comma")
	}
	for _, kv := range parts[1:] {
		if kv == "" {
			return Devargs{}, errors.New("empty argument (two commas in a row or a trailing comma)")
		}
		k, v, found := strings.Cut(kv, "=")
		if !found {
			return Devargs{}, fmt.Errorf("argument %q is not key=value", kv)
		}
		if !keyRE.MatchString(k) {
			return Devargs{}, fmt.Errorf("argument %q has an empty or invalid key", kv)
		}
		d.Opts = append(d.Opts, Opt{Key: k, Value: v})
	}
	return d, nil
}

// String writes d back as DPDK reads it; Parse(s).String() == s.
func (d Devargs) String() string {
	var b strings.Builder
	b.WriteString(d.Device)
	for _, o := range d.Opts {
		b.WriteString("," + o.Key + "=" + o.Value)
	}
	return b.String()
}

// Get is the value of the first option named key.
func (d Devargs) Get(key string) (string, bool) {
	for _, o := range d.Opts {
		if o.Key == key {
			return o.Value, true
		}
	}
	return "", false
}

// Device is the device part of s (before the first comma outside
// brackets), whatever else s holds.
func Device(s string) string { return Split(s)[0] }

// Options are s's option parts as written (key=value), brackets kept whole.
func Options(s string) []string { return Split(s)[1:] }

// Lookup is the value of the first option key in s, read leniently (an
// option without '=' is skipped).
func Lookup(s, key string) (string, bool) {
	for _, kv := range Options(s) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// Values are s's key=value options as a map, read leniently (an option
// without '=' is skipped; a repeated key keeps its last value), never nil.
func Values(s string) map[string]string {
	kv := map[string]string{}
	for _, o := range Options(s) {
		if k, v, ok := strings.Cut(o, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// Merge appends key=value options to s, skipping every key s already
// gives (s's own value wins) and a key opts repeat.
func Merge(s string, opts []string) string {
	have := map[string]bool{}
	for _, kv := range Options(s) {
		k, _, _ := strings.Cut(kv, "=")
		have[k] = true
	}
	out := s
	for _, kv := range opts {
		if k, _, _ := strings.Cut(kv, "="); !have[k] {
			out += "," + kv
			have[k] = true
		}
	}
	return out
}

// PCI returns the full PCI address (domain added) when s names a PCI
// device ("0000:03:00.0,representor=[65535]" -> "0000:03:00.0").
func PCI(s string) (string, bool) {
	return pci.Canonical(Device(s))
}

// Check is a syntax check of s for a user: "" when fine, else what is
// wrong. On top of Parse it refuses white space and quotes (never part of
// devargs, always a paste or shell slip) and a device that is neither a PCI
// address nor a vdev name.
func Check(s string) string {
	if s == "" {
		return "empty"
	}
	if strings.ContainsAny(s, " \t\n\"'") {
		return "contains whitespace or quotes"
	}
	if err := balanced(s); err != nil {
		return err.Error()
	}
	dev := Device(s)
	if dev == "" {
		return "no device name before the first comma"
	}
	if _, ok := pci.Canonical(dev); !ok && !keyRE.MatchString(dev) {
		return fmt.Sprintf("device %q is neither a PCI address (0000:03:00.0) nor a vdev name (net_null0)", dev)
	}
	if _, err := Parse(s); err != nil {
		return err.Error()
	}
	return ""
}
