package engine

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sailtui/sailtui/engine/periodic"
)

// ProcessOwner names this process as an operation holder: host, pid and the process start time
// (so a recycled pid is not taken for the holder that died).
func ProcessOwner() string {
	pid := os.Getpid()
	return fmt.Sprintf("%s/%d/%s", hostName, pid, procStart(pid))
}

// procStart reads a process's start time (clock ticks since boot, field 22 of /proc/PID/stat).
// Empty when unknown (not Linux, process gone) and for a zombie: a killed holder whose parent
// has not reaped it yet (a terminal multiplexer, a shell that is itself stopped) acts no more,
// and its uses and holds must not wait for the reaping.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may contain spaces and parentheses: split after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" || fields[0] == "x" {
		return ""
	}
	return fields[19]
}

// OwnerDead reports whether owner (a ProcessOwner string) is a process on this host that no
// longer runs, for backends that tag what a process leaves behind with its owner.
func OwnerDead(owner string) bool { return holderDead(owner) }

// holderDead reports whether owner is a process on this host that no longer runs. Holders on
// other hosts are never known dead; they are taken over after the heartbeat timeout.
func holderDead(owner string) bool {
	parts := strings.Split(owner, "/")
	if len(parts) != 3 || parts[0] != hostName || parts[2] == "" {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	return procStart(pid) != parts[2]
}

// stale reports whether p's holder may be taken over: known dead, or silent past the timeout.
func (e *Engine) stale(p Project) bool {
	if p.OpID == "" {
		return false
	}
	if p.OpOwner == e.cfg.Owner {
		// Our own operation: in flight in this process, never stale to us.
		return false
	}
	if holderDead(p.OpOwner) {
		return true
	}
	return e.now().Sub(p.OpHeartbeat) > e.cfg.OpTimeout
}

// heartbeat keeps an operation's hold fresh until stop is called. The beats are detached from
// ctx's cancellation: a cancelled step must not let the hold go stale while the operation
// winds down, and only stop ends them.
func (e *Engine) heartbeat(ctx context.Context, o *op) (stop func()) {
	ctx = context.WithoutCancel(ctx)
	// Read once here: the op's own goroutine replaces o.p as it goes.
	projectID, hold := o.p.ID, o.hold
	return periodic.Every(ctx, max(e.cfg.OpTimeout/4, time.Second), func(bctx context.Context) {
		// A failed beat is not fatal here (the store may be away for a moment); one that finds
		// the hold at a newer epoch marks the op superseded, so its next step stops.
		_ = o.noteLost(e.store.Heartbeat(bctx, projectID, hold, e.now()))
	})
}
