package rshim

import (
	"regexp"
	"strings"
)

// LogLine is one line of the rshim log section (DISPLAY_LEVEL 2;
// src/rshim_log.c rshim_log_show, hardware-formats.md §19.2):
//
//	" %s[%s]: %s"                      level, module, text (a message)
//	" Exception(%s): syndrome = 0x%x"  a crash record, maybe "(Data Abort)"/"(SError)"
//	" PANIC(%s): PC = 0x%x"            a crash record
//	"   %-16s0x%llx"                   a register line after a crash record
//
// Everything the Arm OS or the BFB installer writes (bfrshlog) shows as
// module MISC; BL1, BL2, BL2R, BL31, UEFI and PSC are the boot firmware's
// (§19.5).
type LogLine struct {
	Kind   string `json:"kind"`             // LogMessage, LogCrash, LogRegister, LogOther
	Level  string `json:"level,omitempty"`  // INFO, WARN, ERR, ASSERT (messages)
	Module string `json:"module,omitempty"` // MISC, BL1, BL2, BL2R, BL31, UEFI, PSC
	Text   string `json:"text"`             // the message text; the whole line for other kinds
}

// Kinds of LogLine.
const (
	LogMessage  = "message"
	LogCrash    = "crash"
	LogRegister = "register"
	LogOther    = "other" // a line of none of rshim's shapes (kept, never dropped)
)

// rshim_log_levels and rshim_log_mod of src/rshim_log.c: an out-of-range
// level or module prints as INFO / MISC, so no other name is printed.
var (
	logMsgRe   = regexp.MustCompile(`^ ?(INFO|WARN|ERR|ASSERT)\[(MISC|BL1|BL2|BL2R|BL31|UEFI|PSC)\]: ?(.*)$`)
	logCrashRe = regexp.MustCompile(`^ ?(?:Exception|PANIC)\((MISC|BL1|BL2|BL2R|BL31|UEFI|PSC)\): `)
	logRegRe   = regexp.MustCompile(`^   [a-z0-9_]+ *0x[0-9a-f]+$`)
)

// ParseLog parses log lines: the part of a level-2 misc read after the
// title, bfb-install's own copy of it (/tmp/bfb-install-rshim<N>.log, whose
// first line is "# $(date)"), or any text holding such lines. Blank lines
// and bfb-install's "#" header are skipped; a line of no known shape is
// kept as LogOther. Lines are matched with the one leading space rshim
// prints, or without it (bfb-install's tee keeps it, a copy pasted from a
// web page may not).
func ParseLog(text string) []LogLine {
	var out []LogLine
	for _, raw := range strings.Split(text, "\n") {
		raw = strings.TrimRight(raw, "\r")
		t := strings.TrimSpace(raw)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "-----") || t == "Log Messages" {
			continue
		}
		out = append(out, parseLogLine(raw))
	}
	return out
}

func parseLogLine(raw string) LogLine {
	if m := logMsgRe.FindStringSubmatch(raw); m != nil {
		return LogLine{Kind: LogMessage, Level: m[1], Module: m[2], Text: strings.TrimRight(m[3], " ")}
	}
	if m := logCrashRe.FindStringSubmatch(raw); m != nil {
		return LogLine{Kind: LogCrash, Module: m[1], Text: strings.TrimSpace(raw)}
	}
	if logRegRe.MatchString(raw) {
		return LogLine{Kind: LogRegister, Text: strings.TrimSpace(raw)}
	}
	return LogLine{Kind: LogOther, Text: strings.TrimSpace(raw)}
}

// String prints the line as rshim does (" INFO[MISC]: Linux up"); a line
// of another shape as it was, less surrounding space.
func (l LogLine) String() string {
	switch l.Kind {
	case LogMessage:
		return " " + l.Level + "[" + l.Module + "]: " + l.Text
	case LogRegister:
		return "   " + l.Text
	case LogCrash:
		return " " + l.Text
	}
	return l.Text
}
