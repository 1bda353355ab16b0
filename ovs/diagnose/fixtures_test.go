package diagnose

import (
	"os"
	"path/filepath"
	"testing"
)

// readSample reads one of the driver's recordings (ovs/testdata: ovs-vsctl
// state, dpctl/dump-flows), which its parser tests read too.
func readSample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dpflowsFixture(t testing.TB, name string) []byte {
	t.Helper()
	return readSample(t, filepath.Join("dpflows", name))
}
