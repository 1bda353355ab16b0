package ovs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"rig/internal/host"
	"rig/ovs"
	"rig/ovs/ovstest"
)

// ovsdb-server dies while ovs-vswitchd restarts: vswitchd --detach waits
// for its configuration from the database and never returns. The restart
// must end, bounded, with an error naming ovsdb-server, and leave no
// half-started vswitchd behind.
func TestPrivilegedVswitchdRestartDBDied(t *testing.T) {
	rec := &ovstest.Recorder{}
	h := &host.Host{Root: "/", Exec: rec.Exec}
	d := ovstest.Start(t, h)
	dbPID := d.Status().OVSDB.PID
	rec.Next = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name == "env" && len(args) > 0 && strings.Contains(strings.Join(args, " "), ovs.DefaultVswitchd) {
			_ = syscall.Kill(dbPID, syscall.SIGKILL)
		}
		return host.RealExec(ctx, name, args...)
	}
	d.StartWait = 30 * time.Second // the database's death, not this bound, must end it
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- d.RestartVswitchd(context.Background()) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("RestartVswitchd still waiting 20 s after ovsdb-server died")
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %v: it waited for its bound, not for the database's death", took)
	}
	var se *ovs.StartError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "ovsdb-server died") || !strings.Contains(err.Error(), "pid "+strconv.Itoa(dbPID)) ||
		!strings.Contains(se.Cause(), "ovsdb-server crashed or was killed") || !strings.Contains(se.Fix(), "rig ovs daemon start --rundir "+d.Dir) {
		t.Fatalf("restart with a dead ovsdb-server: %v", err)
	}
	if st := d.Status(); st.Vswitchd.Alive {
		t.Errorf("a half-started ovs-vswitchd is left running: %+v", st.Vswitchd)
	}
	if _, err := os.Stat(filepath.Join(d.Dir, ovs.RestartMarker)); err != nil {
		t.Errorf("the restart marker must stay (the restart is not done): %v", err)
	}
}

// The bound alone ends a start that never completes, and says so.
func TestPrivilegedVswitchdStartBound(t *testing.T) {
	rec := &ovstest.Recorder{}
	h := &host.Host{Root: "/", Exec: rec.Exec}
	d := ovstest.Start(t, h)
	// SIGSTOP the database: alive, but it never answers
	dbPID := d.Status().OVSDB.PID
	if err := d.StopVswitchd(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(dbPID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(dbPID, syscall.SIGCONT) })
	d.StartWait = 2 * time.Second
	done := make(chan error, 1)
	go func() { done <- d.StartVswitchd(context.Background()) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("StartVswitchd still waiting 20 s with a 2 s bound")
	}
	_ = syscall.Kill(dbPID, syscall.SIGCONT)
	if err == nil || !strings.Contains(err.Error(), "did not finish starting within 2s") {
		t.Fatalf("start past its bound: %v", err)
	}
	if st := d.Status(); st.Vswitchd.Alive {
		t.Errorf("a half-started ovs-vswitchd is left running: %+v", st.Vswitchd)
	}
}
