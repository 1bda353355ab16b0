package peer

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"rig/internal/host"

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
	euid := os.Geteuid()
	b, err := host.ReadTrusted(path, host.Trust{Flags: unix.O_RDONLY, FollowLink: true, Forbidden: 0o077, MaxSize: maxTokenFile, EUID: euid})
	var u *host.Untrusted
	if err != nil && !errors.As(err, &u) {
		return nil, err
	}
	if u != nil {
		return nil, untrustedToken(path, euid, u)
	}
	tok := []byte(strings.TrimRight(string(b), " \t\r\n"))
	if len(tok) < MinTokenLen {
		return nil, fmt.Errorf("%s holds %d bytes of token: want at least %d (e.g. `head -c 32 /dev/urandom | base64 > %s; chmod 600 %s`)", path, len(tok), MinTokenLen, path, path)
	}
	return tok, nil
}

// untrustedToken words what u found wrong with the token file at path.
func untrustedToken(path string, euid int, u *host.Untrusted) error {
	switch u.Why {
	case host.WhyKind:
		return fmt.Errorf("%s is not a regular file: write the token into a file (e.g. `head -c 32 /dev/urandom | base64 > F; chmod 600 F`)", path)
	case host.WhyOwner:
		return fmt.Errorf("%s is owned by uid %d, not by the user running rig (uid %d): chown %d %s (and chmod 600 %s)", path, u.UID, euid, euid, path, path)
	case host.WhyMode:
		return fmt.Errorf("%s is readable or writable by others (mode %04o): chmod 600 %s", path, u.Mode, path)
	case host.WhySize:
		if u.Grew {
			return fmt.Errorf("%s grew past %d bytes while read: a token file holds one line", path, maxTokenFile)
		}
		return fmt.Errorf("%s is %d bytes: a token file holds one line (at most %d bytes)", path, u.N, maxTokenFile)
	}
	return fmt.Errorf("%s: %w", path, u)
}
