package sysfstree

import (
	"os"
	"path/filepath"
	"testing"

	"rig/internal/host"
)

// FakeRoot builds a host root with files (path -> content; content "<dir>" makes a directory).
func FakeRoot(t testing.TB, files map[string]string) *host.Host {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if c == "<dir>" {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &host.Host{Root: root}
}
