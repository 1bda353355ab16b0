package check

import (
	"fmt"
	"io"
)

// The check shows progress while it runs, on Env.Progress (rig's
// stderr; -o json's stdout stays the document alone): a line when each
// run or search trial starts, the search's own line per trial, and the
// dataplane's line a second (cmd/rig passes the child's sample lines on).

// progressf writes one progress line (nothing without a writer).
func (s *checkStep) progressf(format string, a ...any) {
	if s.progress == nil {
		return
	}
	fmt.Fprintf(s.progress, format+"\n", a...)
}

// progressWriter is the search's progress writer: Env.Progress, or
// io.Discard's nil when there is none.
func (s *checkStep) progressWriter() io.Writer { return s.progress }
