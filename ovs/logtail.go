package ovs

import "strings"

// LogTail is the part of ovs-vswitchd's log written since its last start.
type LogTail []string

// isProblemLine keeps WARN/ERR/EMER lines.
func isProblemLine(l string) bool {
	return strings.Contains(l, "|WARN|") || strings.Contains(l, "|ERR|") || strings.Contains(l, "|EMER|")
}

// ReadLogTail reads the instance's ovs-vswitchd log (a private instance's
// is a real path, the system one's is under the host root) from its last
// "opened log file" line (= last start) on, looking at the last 4 MiB at
// most. A missing log gives nil.
func ReadLogTail(h Host, t Target) LogTail {
	tail, _ := readLogTail(h, t)
	return tail
}

// readLogTail is ReadLogTail; ok is false when the log cannot be read.
func readLogTail(h Host, t Target) (tail LogTail, ok bool) {
	f, err := t.open(h, t.LogFile)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	const max = 4 << 20
	fi, err := f.Stat()
	if err != nil {
		return nil, false
	}
	off := int64(0)
	if fi.Size() > max {
		off = fi.Size() - max
	}
	buf := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(string(buf[:n]), "\n")
	start := 0
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "|vlog|INFO|opened log file") {
			start = i
			break
		}
	}
	for _, l := range lines[start:] {
		if l = strings.TrimSpace(l); l != "" {
			tail = append(tail, l)
		}
	}
	return tail, true
}

// LogSinceStart is this instance's ovs-vswitchd log since its last start
// (ReadLogTail), read once, now: for evidence that is in the log already
// (a diagnosis that waits for a failure's line uses diagnose.EvidenceLog).
func (c *Client) LogSinceStart() LogTail { return ReadLogTail(c.host, c.Target) }

// LastStartLines returns up to max lines of the log since the last start that pass keep.
func LastStartLines(h Host, t Target, max int, keep func(string) bool) []string {
	var out []string
	for _, l := range ReadLogTail(h, t) {
		if keep(l) {
			out = append(out, l)
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}
