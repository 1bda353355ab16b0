// Package ovs drives OvS-DPDK: it reads state with `ovs-vsctl --format=json`,
// writes through ovs-vsctl argv (via the host exec seam, always with a
// timeout), explains its own failures (vswitchd down, ovsdb unreachable, no
// such bridge), reads the vswitchd log, and manages a private
// ovsdb-server/ovs-vswitchd instance whose files all live in one directory.
// Why an interface, DPDK or offload fails is package ovs/diagnose's.
package ovs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Datum is one OVSDB column value as `ovs-vsctl --format=json` prints it:
// an atom (string, number, bool), ["uuid", U], ["named-uuid", U],
// ["set", [atoms]] or ["map", [[k, v], ...]]. A set of exactly one element
// is printed as the bare atom, so Set() treats an atom as a one-element set.
type Datum struct {
	Kind  DatumKind
	Atom  any // string, int64, float64 or bool for KindAtom; the uuid string for KindUUID
	Elems []Datum
	Keys  []Datum // for KindMap: Keys[i] -> Elems[i]
}

// DatumKind tells what a Datum holds.
type DatumKind int

const (
	KindAtom DatumKind = iota
	KindUUID
	KindSet
	KindMap
)

// Table is the result of one `--format=json list|find` command.
type Table struct {
	Headings []string
	Rows     []Row
}

// Row maps a column heading to its value.
type Row map[string]Datum

// ParseTables parses the output of one ovs-vsctl --format=json invocation,
// which prints one JSON object per command ({"data": [...], "headings": [...]}).
func ParseTables(out []byte) ([]Table, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var tables []Table
	for {
		var raw struct {
			Data     []json.RawMessage `json:"data"`
			Headings []string          `json:"headings"`
		}
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ovsdb json: %w", err)
		}
		t := Table{Headings: raw.Headings}
		for i, rm := range raw.Data {
			var cells []json.RawMessage
			if err := json.Unmarshal(rm, &cells); err != nil {
				return nil, fmt.Errorf("ovsdb json: row %d: %w", i, err)
			}
			if len(cells) != len(raw.Headings) {
				return nil, fmt.Errorf("ovsdb json: row %d has %d cells for %d headings", i, len(cells), len(raw.Headings))
			}
			row := Row{}
			for j, c := range cells {
				d, err := parseDatum(c, 0)
				if err != nil {
					return nil, fmt.Errorf("ovsdb json: row %d column %s: %w", i, raw.Headings[j], err)
				}
				row[raw.Headings[j]] = d
			}
			t.Rows = append(t.Rows, row)
		}
		tables = append(tables, t)
	}
	return tables, nil
}

func parseDatum(b json.RawMessage, depth int) (Datum, error) {
	if depth > 3 {
		return Datum{}, errors.New("nested too deep")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Datum{}, err
	}
	return datumOf(v, depth)
}

func atomOf(v any) (Datum, error) {
	switch x := v.(type) {
	case string:
		return Datum{Kind: KindAtom, Atom: x}, nil
	case bool:
		return Datum{Kind: KindAtom, Atom: x}, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return Datum{Kind: KindAtom, Atom: i}, nil
		}
		f, err := x.Float64()
		if err != nil {
			return Datum{}, fmt.Errorf("bad number %s", x)
		}
		return Datum{Kind: KindAtom, Atom: f}, nil
	case []any:
		if len(x) == 2 {
			if tag, ok := x[0].(string); ok && (tag == "uuid" || tag == "named-uuid") {
				u, ok := x[1].(string)
				if !ok {
					return Datum{}, fmt.Errorf("%s: want a string", tag)
				}
				return Datum{Kind: KindUUID, Atom: u}, nil
			}
		}
	}
	return Datum{}, fmt.Errorf("not an atom: %v", v)
}

func datumOf(v any, depth int) (Datum, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return atomOf(v)
	}
	tag, _ := arr[0].(string)
	switch tag {
	case "set":
		elems, ok := arr[1].([]any)
		if !ok {
			return Datum{}, errors.New("set: want a list")
		}
		d := Datum{Kind: KindSet}
		for _, e := range elems {
			a, err := atomOf(e)
			if err != nil {
				return Datum{}, fmt.Errorf("set: %w", err)
			}
			d.Elems = append(d.Elems, a)
		}
		return d, nil
	case "map":
		pairs, ok := arr[1].([]any)
		if !ok {
			return Datum{}, errors.New("map: want a list")
		}
		d := Datum{Kind: KindMap}
		for _, p := range pairs {
			kv, ok := p.([]any)
			if !ok || len(kv) != 2 {
				return Datum{}, errors.New("map: want [key, value] pairs")
			}
			k, err := atomOf(kv[0])
			if err != nil {
				return Datum{}, fmt.Errorf("map key: %w", err)
			}
			val, err := atomOf(kv[1])
			if err != nil {
				return Datum{}, fmt.Errorf("map value: %w", err)
			}
			d.Keys = append(d.Keys, k)
			d.Elems = append(d.Elems, val)
		}
		return d, nil
	}
	return atomOf(v)
}

// String renders an atom as ovs-vsctl's text output would (numbers in
// decimal, bools true/false); an empty set is "".
func (d Datum) String() string {
	switch d.Kind {
	case KindAtom, KindUUID:
		switch x := d.Atom.(type) {
		case string:
			return x
		case int64:
			return strconv.FormatInt(x, 10)
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64)
		case bool:
			return strconv.FormatBool(x)
		}
	case KindSet:
		if len(d.Elems) == 1 {
			return d.Elems[0].String()
		}
		parts := make([]string, len(d.Elems))
		for i, e := range d.Elems {
			parts[i] = e.String()
		}
		return strings.Join(parts, ",")
	case KindMap:
		m := d.Map()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + m[k]
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// IsEmpty reports an empty set or map (an optional column with no value).
func (d Datum) IsEmpty() bool {
	return (d.Kind == KindSet || d.Kind == KindMap) && len(d.Elems) == 0
}

// Int returns an integer atom (or a one-element set of one); ok is false otherwise.
func (d Datum) Int() (int64, bool) {
	if d.Kind == KindSet && len(d.Elems) == 1 {
		return d.Elems[0].Int()
	}
	if d.Kind != KindAtom {
		return 0, false
	}
	switch x := d.Atom.(type) {
	case int64:
		return x, true
	case float64:
		return int64(x), x == float64(int64(x))
	}
	return 0, false
}

// Bool returns a boolean atom (or a one-element set of one).
func (d Datum) Bool() (bool, bool) {
	if d.Kind == KindSet && len(d.Elems) == 1 {
		return d.Elems[0].Bool()
	}
	b, ok := d.Atom.(bool)
	return b, ok && d.Kind == KindAtom
}

// Set returns the elements: an atom is a one-element set, a map is nil.
func (d Datum) Set() []Datum {
	switch d.Kind {
	case KindSet:
		return d.Elems
	case KindAtom, KindUUID:
		return []Datum{d}
	}
	return nil
}

// UUIDs returns the uuid strings of a set (or single uuid).
func (d Datum) UUIDs() []string {
	var out []string
	for _, e := range d.Set() {
		if e.Kind == KindUUID {
			out = append(out, e.Atom.(string))
		}
	}
	return out
}

// Map returns a map column as strings (numbers rendered in decimal).
func (d Datum) Map() map[string]string {
	if d.Kind != KindMap {
		return nil
	}
	m := make(map[string]string, len(d.Keys))
	for i, k := range d.Keys {
		m[k.String()] = d.Elems[i].String()
	}
	return m
}

// Str returns the row's column as a string ("" when absent or empty).
func (r Row) Str(col string) string {
	d, ok := r[col]
	if !ok || d.IsEmpty() {
		return ""
	}
	return d.String()
}
