// Package playbooks holds rig's desired-state format and the embedded
// playbooks. A playbook is YAML; each section maps to one provisioning step.
// Unknown keys and bad values are errors naming the file, line and field.
package playbooks

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"rig/internal/host"
)

//go:embed *.yaml
var embedded embed.FS

// Playbook is the desired state of one host. Sections are optional; a step
// runs only for the sections present.
type Playbook struct {
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Hugepages   *HugepagesSpec `yaml:"hugepages"`
	RDMA        *RDMASpec      `yaml:"rdma"`
	MST         *MSTSpec       `yaml:"mst"`
	Mode        *ModeSpec      `yaml:"mode"`
	Firmware    *FirmwareSpec  `yaml:"firmware"`
	Kernel      *KernelSpec    `yaml:"kernel"`
	Bind        *BindSpec      `yaml:"bind"`
	SRIOV       *SRIOVSpec     `yaml:"sriov"`
	OVS         *OVSSpec       `yaml:"ovs"`
	Check       *CheckSpec     `yaml:"check"`

	// Source is where the playbook came from ("embedded:NAME" or a path).
	Source string `yaml:"-"`
}

// FieldError is a bad value at a dotted field path (e.g. "hugepages.pages[0].size").
type FieldError struct {
	Field string
	Msg   string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Msg }

// Error is a playbook error with file and line.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Errors is every problem found in one playbook, in file order.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Names lists the embedded playbooks.
func Names() []string {
	ents, _ := embedded.ReadDir(".")
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}

// Embedded returns the raw text of an embedded playbook.
func Embedded(name string) ([]byte, bool) {
	b, err := embedded.ReadFile(name + ".yaml")
	return b, err == nil
}

// Load resolves ref as an embedded playbook name, else as a file path.
func Load(ref string) (*Playbook, error) {
	if b, ok := Embedded(ref); ok && !strings.ContainsAny(ref, "/.") {
		return Parse("embedded:"+ref, b)
	}
	b, err := readFile(ref)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("playbook %q: not an embedded playbook (%s) and no such file", ref, strings.Join(Names(), ", "))
		}
		return nil, err
	}
	return Parse(ref, b)
}

// MaxSize is the largest playbook rig reads. Real playbooks are a few kB;
// the cap keeps `-p /dev/zero` or a wrong multi-GB file from exhausting memory.
const MaxSize = 1 << 20

// readFile reads a playbook file: a regular file of at most MaxSize bytes.
// It opens non-blocking, so a FIFO given as the playbook is refused at
// once (a blocking open would wait for a writer for ever).
func readFile(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, &Error{File: name, Msg: fmt.Sprintf("cannot open: %v; check the path and its permissions", errors.Unwrap(err))}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{File: name, Msg: fmt.Sprintf("cannot stat: %v", err)}
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{File: name, Msg: fmt.Sprintf("not a regular file (%s); give the path of a YAML playbook file or an embedded playbook name (%s)",
			host.FileKind(fi.Mode()), strings.Join(Names(), ", "))}
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, &Error{File: name, Msg: fmt.Sprintf("read: %v", err)}
	}
	if len(b) > MaxSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("larger than %d bytes (1 MiB), the most a playbook may be; is this the right file? split it or remove what is not a playbook", MaxSize)}
	}
	return b, nil
}

// checkEncoding finds what yaml.v3 reports without a line: a UTF-16/UTF-32
// byte-order mark and invalid UTF-8.
func checkEncoding(file string, data []byte) error {
	switch {
	case bytes.HasPrefix(data, []byte{0x00, 0x00, 0xFE, 0xFF}), bytes.HasPrefix(data, []byte{0xFF, 0xFE, 0x00, 0x00}):
		return &Error{File: file, Line: 1, Msg: "file is UTF-32 (it starts with a UTF-32 byte-order mark); save it as UTF-8, e.g. `iconv -f UTF-32 -t UTF-8 in.yaml > out.yaml`"}
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}), bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		return &Error{File: file, Line: 1, Msg: "file is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8, e.g. `iconv -f UTF-16 -t UTF-8 in.yaml > out.yaml`"}
	}
	if utf8.Valid(data) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return &Error{File: file, Line: line, Msg: fmt.Sprintf("invalid UTF-8 (byte 0x%02X at column %d); save the file as UTF-8 (e.g. `iconv -f LATIN1 -t UTF-8`) or remove the character", data[i], col)}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return nil
}

// tabIndentLine returns the first line (1-based) indented with a tab, or 0.
// YAML forbids tabs in indentation; yaml.v3 reports them as "found character
// that cannot start any token".
func tabIndentLine(data []byte) int {
	for i, l := range bytes.Split(data, []byte("\n")) {
		rest := bytes.TrimLeft(l, " \t")
		if len(rest) == 0 || rest[0] == '#' {
			continue
		}
		if bytes.IndexByte(l[:len(l)-len(rest)], '\t') >= 0 {
			return i + 1
		}
	}
	return 0
}

// yamlError turns a yaml.v3 error into a playbook error with the line once
// (yaml says "yaml: line 3: ..."), and explains tab indentation.
func yamlError(file string, data []byte, err error) *Error {
	line := yamlErrLine(err)
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if line > 0 {
		msg = strings.TrimPrefix(msg, fmt.Sprintf("line %d: ", line))
	}
	if tl := tabIndentLine(data); tl > 0 && (line == 0 || tl <= line) {
		return &Error{File: file, Line: tl, Msg: "tab character in indentation; YAML indents with spaces only: replace the tab(s) at the start of the line with spaces"}
	}
	return &Error{File: file, Line: line, Msg: msg}
}

// Parse decodes and validates a playbook. file names it in errors.
func Parse(file string, data []byte) (*Playbook, error) {
	if len(data) > MaxSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("larger than %d bytes (1 MiB), the most a playbook may be; is this the right file?", MaxSize)}
	}
	if err := checkEncoding(file, data); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "empty playbook"}
		}
		return nil, yamlError(file, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: file, Line: extra.Line, Msg: "more than one YAML document; a playbook is one document"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	w := walker{file: file, lines: map[string]int{}}
	w.walk(root, reflect.TypeOf(Playbook{}), "")
	if len(w.errs) > 0 {
		return nil, w.errs
	}
	var pb Playbook
	if err := root.Decode(&pb); err != nil {
		return nil, &Error{File: file, Line: yamlErrLine(err), Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	pb.Source = file
	var errs Errors
	for _, fe := range pb.Validate() {
		errs = append(errs, &Error{File: file, Line: w.line(fe.Field), Field: fe.Field, Msg: fe.Msg})
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
		return nil, errs
	}
	return &pb, nil
}

func yamlErrLine(err error) int {
	s := err.Error()
	i := strings.Index(s, "line ")
	if i < 0 {
		return 0
	}
	n := 0
	for _, c := range s[i+5:] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// Validate checks values; each error names its field path.
func (p *Playbook) Validate() []FieldError {
	var errs []FieldError
	if strings.ContainsAny(p.Name, "\t\n\r") || controlChar(p.Name) != "" {
		errs = append(errs, FieldError{"name", fmt.Sprintf("%s holds a tab, a line break or a control character; a playbook's name is one line of text (reports and the state file show it)", shortValue(p.Name))})
	}
	add := func(prefix string, fes []FieldError) {
		for _, fe := range fes {
			if fe.Field == "" {
				fe.Field = prefix // the section as a whole
			} else {
				fe.Field = prefix + "." + fe.Field
			}
			errs = append(errs, fe)
		}
	}
	if p.Hugepages != nil {
		add("hugepages", p.Hugepages.Validate())
	}
	if p.RDMA != nil {
		add("rdma", p.RDMA.Validate())
	}
	if p.MST != nil {
		add("mst", p.MST.Validate())
	}
	if p.Mode != nil {
		add("mode", p.Mode.Validate())
	}
	if p.Firmware != nil {
		add("firmware", p.Firmware.Validate())
	}
	if p.Mode != nil && p.Firmware != nil {
		errs = append(errs, validateModeFirmware(p.Mode, p.Firmware)...)
	}
	if p.Kernel != nil {
		add("kernel", p.Kernel.Validate())
	}
	if p.Bind != nil {
		add("bind", p.Bind.Validate())
	}
	if p.SRIOV != nil {
		add("sriov", p.SRIOV.Validate())
	}
	if p.OVS != nil {
		add("ovs", p.OVS.Validate())
	}
	if p.Check != nil {
		add("check", p.Check.ValidateWith(p.OVS))
	}
	return errs
}

// walker checks the YAML tree against the Go types before decoding: unknown
// keys, wrong kinds and scalar types become errors with file:line:field, and
// it records each field path's line for later value errors.
type walker struct {
	file  string
	lines map[string]int
	errs  Errors
}

func (w *walker) line(field string) int {
	for f := field; f != ""; {
		if l, ok := w.lines[f]; ok {
			return l
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return 0
}

func (w *walker) fail(n *yaml.Node, field, format string, args ...any) {
	w.errs = append(w.errs, &Error{File: w.file, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if path != "" {
		if _, ok := w.lines[path]; !ok {
			w.lines[path] = n.Line
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.walkStruct(n, t, path)
	case reflect.Slice, reflect.Map:
		w.walkCollection(n, t, path)
	default:
		w.checkScalar(n, t, path)
	}
}

// walkStruct checks a mapping against a struct's yaml fields: unknown and
// duplicate keys fail, known ones are walked.
func (w *walker) walkStruct(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.fail(n, path, "want a mapping (key: value), got %s", kindName(n))
		return
	}
	fields := map[string]reflect.Type{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		fields[tag] = f.Type
		names = append(names, tag)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		ft, ok := fields[key]
		if !ok {
			w.fail(k, join(path, fieldKey(key)), "unknown field (known: %s)", strings.Join(names, ", "))
			continue
		}
		if seen[key] {
			w.fail(k, join(path, key), "duplicate key")
			continue
		}
		seen[key] = true
		w.lines[join(path, key)] = k.Line
		w.walk(v, ft, join(path, key))
	}
}

// walkCollection walks a list's items or a map's values.
func (w *walker) walkCollection(n *yaml.Node, t reflect.Type, path string) {
	if t.Kind() == reflect.Slice {
		if n.Kind != yaml.SequenceNode {
			w.fail(n, path, "want a list, got %s", kindName(n))
			return
		}
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			w.lines[p] = c.Line
			w.walk(c, t.Elem(), p)
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		w.fail(n, path, "want a mapping (key: value), got %s", kindName(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		msg := controlChar(k.Value)
		if msg == "" && strings.ContainsAny(k.Value, "\t\n") {
			msg = "contains a tab or a line break"
		}
		if msg != "" {
			w.fail(k, join(path, fieldKey(k.Value)), "key %s; remove it: names rig passes to the kernel and to tools hold printable text only", msg)
			continue
		}
		p := join(path, k.Value)
		w.lines[p] = k.Line
		w.walk(v, t.Elem(), p)
	}
}

// controlChar says which control character s holds ("" when none): a NUL
// byte (which ends a path or a name at the kernel, so "/mnt/huge\x00x"
// would mount at /mnt/huge), or any other C0/C1 control or DEL. Tabs and
// newlines are left to each field's own check (a description may hold
// them; a path or a name refuses them there).
func controlChar(s string) string {
	for i, r := range s {
		switch {
		case r == 0:
			return fmt.Sprintf("contains a NUL byte (\\x00 at byte %d)", i)
		case r == '\t' || r == '\n':
		case unicode.IsControl(r):
			return fmt.Sprintf("contains the control character %U at byte %d", r, i)
		}
	}
	return ""
}

// fieldKey is a mapping key for a field path: quoted when it holds a
// control character, so the message shows it rather than printing it.
func fieldKey(k string) string {
	if controlChar(k) != "" || strings.ContainsAny(k, "\t\n") {
		return strconv.Quote(k)
	}
	return k
}

// checkScalar checks a scalar node against a string, bool or number field.
func (w *walker) checkScalar(n *yaml.Node, t reflect.Type, path string) {
	switch t.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.fail(n, path, "want a string, got %s", kindName(n))
		} else if msg := controlChar(n.Value); msg != "" {
			w.fail(n, path, "%s %s; remove it: paths, names and values rig passes to the kernel and to tools hold printable text only", shortValue(n.Value), msg)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			w.fail(n, path, "want true or false, got %s", describe(n))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			w.fail(n, path, "want a whole number, got %s", describe(n))
			return
		}
		bits := t.Bits()
		if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
			if _, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, bits); err != nil {
				w.fail(n, path, "want a whole number from 0 to %d, got %s", uint64(1)<<bits-1, n.Value)
			}
		} else if _, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, bits); err != nil {
			w.fail(n, path, "number %s out of range", n.Value)
		}
	case reflect.Float32, reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
			w.fail(n, path, "want a number, got %s", describe(n))
		}
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return describe(n)
	}
	return "something else"
}

func describe(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return kindName(n)
	}
	return strconv.Quote(n.Value)
}

// ResolvePath returns a playbook-relative path made absolute against the
// playbook file's directory (embedded playbooks use the working directory).
func (p *Playbook) ResolvePath(rel string) string {
	if rel == "" || filepath.IsAbs(rel) || strings.HasPrefix(p.Source, "embedded:") {
		return rel
	}
	return filepath.Join(filepath.Dir(p.Source), rel)
}
