package oomkills

import (
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The count is the oom_kill line of memory.events in the cgroup the
// process is in, as /proc/<pid>/cgroup names it on cgroup v2.
func TestTheCountIsTheOOMKillLineOfTheProcessCgroup(t *testing.T) {
	proc, cg := t.TempDir(), t.TempDir()
	unit := "/agent.slice/agent-box.slice/agent-box-alice.slice/agent-box-sessions@alice.service"
	write(t, proc+"/42/cgroup", "0::"+unit+"\n")
	write(t, cg+unit+"/memory.events", "low 0\nhigh 0\nmax 161\noom 1\noom_kill 3\noom_group_kill 0\n")
	n, err := Of(proc, cg, 42)
	if err != nil || n != 3 {
		t.Errorf("Of = %d, %v; want 3", n, err)
	}
}

func TestWhatCannotBeReadIsAnError(t *testing.T) {
	for _, tc := range []struct{ name, cgroup, events string }{
		{"cgroup v1 only", "12:pids:/x\n", "oom_kill 1\n"},
		{"a path leaving the root", "0::/../../etc\n", "oom_kill 1\n"},
		{"no memory controller", "0::/x\n", ""},
		{"no oom_kill line", "0::/x\n", "low 0\n"},
		{"a count that is not a number", "0::/x\n", "oom_kill many\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc, cg := t.TempDir(), t.TempDir()
			write(t, proc+"/7/cgroup", tc.cgroup)
			if tc.events != "" {
				write(t, cg+"/x/memory.events", tc.events)
			}
			if n, err := Of(proc, cg, 7); err == nil {
				t.Errorf("Of = %d, nil; want an error", n)
			}
		})
	}
	if _, err := Of(t.TempDir(), t.TempDir(), 1); err == nil {
		t.Errorf("a process that is gone: no error")
	}
}
