package grub

import (
	"fmt"
	"strings"
)

// parseGrubDefaults applies one sourced file's assignments of the tracked
// variables (grubVars) to vars, in order, as the shell would. Without a
// shell, it follows only these forms, one per line:
//
//	GRUB_CMDLINE_LINUX="a b"          # "…", '…', bare words, \ escapes
//	GRUB_CMDLINE_LINUX_DEFAULT=quiet
//	export GRUB_CMDLINE_LINUX='…'
//	GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }x=1"   # rig's drop-in
//
// with $VAR, ${VAR}, ${VAR:+WORD} and ${VAR:-WORD} of the tracked
// variables. A command substitution, another variable, a second command
// on the line, an unterminated quote, or a tracked variable in any other
// statement (`if …`, `unset …`) is an error naming file and line: the real
// update-grub would run it, the lab cannot know its result. Assignments
// of other variables are not read at all.
func parseGrubDefaults(file, text string, vars map[string]string) error {
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' {
			continue
		}
		name, val, isAssign := splitAssignment(line)
		if !isAssign || !tracked(name) {
			if isAssign || onlyExports(line) {
				continue
			}
			if v := mentionedVar(line); v != "" {
				return grubLineErr(file, i+1, v, fmt.Errorf("%q is a statement the lab's update-grub cannot follow (it reads only plain assignments)", line))
			}
			continue
		}
		v, err := expandWord(val, vars)
		if err != nil {
			return grubLineErr(file, i+1, name, err)
		}
		vars[name] = v
	}
	return nil
}

func grubLineErr(file string, line int, name string, err error) error {
	return fmt.Errorf("%s:%d: %s: %w; write the value as a plain assignment (NAME=\"words\"), as rig's own drop-in does", file, line, name, err)
}

func tracked(name string) bool {
	for _, v := range grubVars {
		if v == name {
			return true
		}
	}
	return false
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || !first && c >= '0' && c <= '9'
}

// onlyExports: `export NAME…` without a value changes nothing update-grub reads.
func onlyExports(line string) bool {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "export" {
		return false
	}
	for _, n := range f[1:] {
		if _, _, ok := splitAssignment(n + "=x"); !ok {
			return false
		}
	}
	return true
}

// splitAssignment splits `[export ]NAME=VALUE`.
func splitAssignment(line string) (name, value string, ok bool) {
	line = strings.TrimPrefix(line, "export ")
	line = strings.TrimLeft(line, " \t")
	n := 0
	for n < len(line) && isNameByte(line[n], n == 0) {
		n++
	}
	if n == 0 || n >= len(line) || line[n] != '=' {
		return "", "", false
	}
	return line[:n], line[n+1:], true
}

// mentionedVar returns a tracked variable the line names as a whole word.
func mentionedVar(line string) string {
	for _, v := range grubVars {
		for i := 0; ; {
			j := strings.Index(line[i:], v)
			if j < 0 {
				break
			}
			end := i + j + len(v)
			if (i+j == 0 || !isNameByte(line[i+j-1], false)) && (end == len(line) || !isNameByte(line[end], false)) {
				return v
			}
			i = end
		}
	}
	return ""
}

// expandWord expands the value of an assignment: one shell word, then
// nothing but blanks or a comment.
func expandWord(s string, vars map[string]string) (string, error) {
	var b strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			rest := strings.TrimLeft(s[i:], " \t")
			if rest != "" && rest[0] != '#' {
				return "", fmt.Errorf("more after the value: %q (another command)", rest)
			}
			return b.String(), nil
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("unterminated single quote")
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case c == '"':
			n, err := expandDouble(s[i+1:], vars, &b)
			if err != nil {
				return "", err
			}
			i += n + 2
		case c == '$':
			n, err := expandDollar(s[i:], vars, &b)
			if err != nil {
				return "", err
			}
			i += n
		case c == '\\' && i+1 < len(s):
			b.WriteByte(s[i+1])
			i += 2
		case strings.IndexByte(";&|<>()`", c) >= 0:
			return "", fmt.Errorf("shell syntax %q in the value", c)
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

// expandDouble expands a double-quoted string's body (s starts after the
// opening quote) and returns the body's length (without the closing quote).
func expandDouble(s string, vars map[string]string, b *strings.Builder) (int, error) {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '"':
			return i, nil
		case c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0:
			b.WriteByte(s[i+1])
			i += 2
		case c == '`':
			return 0, fmt.Errorf("command substitution (`…`) in the value")
		case c == '$':
			n, err := expandDollar(s[i:], vars, b)
			if err != nil {
				return 0, err
			}
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return 0, fmt.Errorf("unterminated double quote")
}

// expandDollar expands the parameter at s[0] == '$' and returns how much
// of s it took.
func expandDollar(s string, vars map[string]string, b *strings.Builder) (int, error) {
	if len(s) < 2 {
		b.WriteByte('$')
		return 1, nil
	}
	if s[1] == '(' {
		return 0, fmt.Errorf("command substitution ($(…)) in the value")
	}
	if s[1] != '{' {
		n := 1
		for n < len(s) && isNameByte(s[n], n == 1) {
			n++
		}
		if n == 1 {
			b.WriteByte('$')
			return 1, nil
		}
		v, err := lookupVar(s[1:n], vars)
		b.WriteString(v)
		return n, err
	}
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return 0, fmt.Errorf("unterminated ${")
	}
	body := s[2:end]
	name, op, word := body, "", ""
	if k := strings.Index(body, ":"); k >= 0 && k+1 < len(body) && (body[k+1] == '+' || body[k+1] == '-') {
		name, op, word = body[:k], body[k:k+2], body[k+2:]
	}
	v, err := lookupVar(name, vars)
	if err != nil {
		return 0, err
	}
	if op == "" {
		b.WriteString(v)
		return end + 1, nil
	}
	if strings.ContainsAny(word, "{\"'`\\") {
		return 0, fmt.Errorf("${%s%s…} with quotes or braces in its word", name, op)
	}
	if (op == ":+") == (v != "") {
		var w strings.Builder
		if _, err := expandDouble(word+`"`, vars, &w); err != nil {
			return 0, err
		}
		v = w.String()
	}
	b.WriteString(v)
	return end + 1, nil
}

func lookupVar(name string, vars map[string]string) (string, error) {
	if !tracked(name) {
		return "", fmt.Errorf("refers to $%s, which the lab's update-grub does not know (it reads only %s)", name, strings.Join(grubVars, " and "))
	}
	return vars[name], nil
}
