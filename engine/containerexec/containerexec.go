// Package containerexec holds what the runtimes that run commands through an exec into a
// container (docker, kubernetes) share: how a command is marked so that a timeout can find and
// kill it and everything it started. Neither the Engine API nor the Kubernetes exec API has a
// call to kill an exec, and a process group would not do: a command may start a session of its
// own.
package containerexec

import (
	"crypto/rand"
	"encoding/hex"
)

// MarkerVar is the environment variable every exec carries, with a value of its own.
const MarkerVar = "SAILTUI_EXEC"

// NewMarker returns a fresh MarkerVar=value pair for one exec.
func NewMarker() string {
	tok := make([]byte, 12)
	_, _ = rand.Read(tok)
	return MarkerVar + "=" + hex.EncodeToString(tok)
}

// KillScript kills, as the container user, every process of the container whose environment
// holds $1 (a marker from NewMarker), until none is left. Run it as sh -c KillScript sh MARKER.
const KillScript = `want="$1"; me=$$; n=0
while :; do
	found=
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = "$me" ] && continue
		if tr '\000' '\n' < "$d/environ" 2>/dev/null | grep -qxF "$want"; then
			kill -9 "$p" 2>/dev/null && found=1
		fi
	done
	[ -z "$found" ] && exit 0
	n=$((n+1)); [ "$n" -ge 50 ] && exit 1
	sleep 0.1
done`
