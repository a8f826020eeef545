//go:build linux

package local

import (
	"os"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on every Linux
// architecture (the kernel converts to it for user space whatever its own HZ).
const userHZ = 100

// groupUsage is what the live processes of one process group use together.
type groupUsage struct {
	cpu   time.Duration
	rss   int64
	procs int
}

// readGroupUsage sums the CPU time and resident memory of the live processes of each process
// group in pgids, in one pass over /proc.
func readGroupUsage(pgids map[int]bool) (map[int]groupUsage, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	page := int64(os.Getpagesize())
	out := make(map[int]groupUsage, len(pgids))
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		st, err := parseProcStat(b)
		if err != nil || !pgids[st.pgrp] || dead(st.state) {
			continue
		}
		g := out[st.pgrp]
		g.cpu += time.Duration(st.cpu) * (time.Second / userHZ)
		g.rss += int64(st.rss) * page
		g.procs++
		out[st.pgrp] = g
	}
	return out, nil
}
