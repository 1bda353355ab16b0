package peer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// maxTokenFile bounds a token file (a token is a line of random text).
const maxTokenFile = 4096

// ReadTokenFile reads a shared token: a regular file of the user running
// rig that no one else may read or write (mode 0600 or stricter), at most
// maxTokenFile bytes, at least MinTokenLen bytes once trailing
// white space is trimmed. It is opened non-blocking (a FIFO cannot hang
// rig) and checked on the open file (fstat). Errors never show the
// content.
func ReadTokenFile(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no token file given")
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	mode := st.Mode & 0o7777
	switch euid := os.Geteuid(); {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("%s is not a regular file: write the token into a file (e.g. `head -c 32 /dev/urandom | base64 > F; chmod 600 F`)", path)
	case int(st.Uid) != euid:
		return nil, fmt.Errorf("%s is owned by uid %d, not by the user running rig (uid %d): chown %d %s (and chmod 600 %s)", path, st.Uid, euid, euid, path, path)
	case mode&0o077 != 0:
		return nil, fmt.Errorf("%s is readable or writable by others (mode %04o): chmod 600 %s", path, mode, path)
	case st.Size > maxTokenFile:
		return nil, fmt.Errorf("%s is %d bytes: a token file holds one line (at most %d bytes)", path, st.Size, maxTokenFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxTokenFile {
		return nil, fmt.Errorf("%s grew past %d bytes while read: a token file holds one line", path, maxTokenFile)
	}
	tok := []byte(strings.TrimRight(string(b), " \t\r\n"))
	if len(tok) < MinTokenLen {
		return nil, fmt.Errorf("%s holds %d bytes of token: want at least %d (e.g. `head -c 32 /dev/urandom | base64 > %s; chmod 600 %s`)", path, len(tok), MinTokenLen, path, path)
	}
	return tok, nil
}
