// Package oomkills reads how many processes of a cgroup an OOM killer
// ended. The count is the oom_kill line of the cgroup's memory.events
// (cgroup v2): kills for the cgroup's own limit, an ancestor's (the user's
// slice, the box's) and the machine's alike, and its descendants'.
package oomkills

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// maxFile bounds what is read of /proc/<pid>/cgroup and memory.events
// (both a few hundred bytes).
const maxFile = 64 << 10

// Of returns the count of the cgroup process pid is in, reading
// procRoot/<pid>/cgroup and cgroupRoot/<its path>/memory.events
// (procRoot and cgroupRoot are /proc and /sys/fs/cgroup but for tests).
func Of(procRoot, cgroupRoot string, pid int) (uint64, error) {
	b, err := userfile.Read(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"), maxFile)
	if err != nil {
		return 0, err
	}
	var path string
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			path = p
		}
	}
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "..") {
		return 0, fmt.Errorf("process %d: no cgroup v2 path in its cgroup file", pid)
	}
	events := filepath.Join(cgroupRoot, path, "memory.events")
	b, err = userfile.Read(events, maxFile)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: oom_kill %q: %w", events, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s: no oom_kill line", events)
}
