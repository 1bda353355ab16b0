package peer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxFarText bounds one piece of the far side's text in a message.
const maxFarText = 512

// farText is text the far side sent (its error, cause, fix), fit for the
// near terminal: control characters (escape sequences, line breaks that
// would forge a line of rig's own, a "fix:" line), Unicode format
// characters (bidi overrides) and invalid UTF-8 are shown escaped, and it
// is cut at maxFarText bytes.
func farText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if b.Len() >= maxFarText {
			b.WriteString("…")
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
