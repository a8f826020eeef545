package engine

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A holder killed but not yet reaped by its parent is a zombie: dead to sailtui, so its
// uses and holds do not wait (the killed `exec -it` client under tmux, issue 30's flake).
func TestHolderDeadZombie(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	owner := fmt.Sprintf("%s/%d/%s", hostName, pid, procStart(pid))
	if holderDead(owner) {
		t.Fatalf("a running holder %s is taken for dead", owner)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Not reaped: wait until the kernel has made it a zombie, then ask.
	for deadline := time.Now().Add(10 * time.Second); !holderDead(owner); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a killed, unreaped holder %s is still taken for alive", owner)
		}
	}
	// Still a zombie (its /proc entry is there): the answer did not come from the pid's going.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err != nil {
		t.Fatal("the holder was reaped; the test did not look at a zombie")
	}
	_ = cmd.Wait()
	reaped = true
	if !holderDead(owner) {
		t.Fatalf("a reaped holder %s is taken for alive", owner)
	}
}
