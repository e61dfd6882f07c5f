package peer

import (
	"os"
	"strings"
	"testing"
)

func TestTheCgroupMustBeTheSystemsTermUnit(t *testing.T) {
	const unit = "agent-box-term@alice.service"
	for _, tc := range []struct {
		name, file string
		ok         bool
	}{
		{"the template's default slice", "0::/system.slice/system-agent\\x2dbox\\x2dterm.slice/agent-box-term@alice.service\n", true},
		{"a slice of the module's", "0::/agent-box.slice/agent-box-term@alice.service\n", true},
		{"hybrid hierarchy", "12:pids:/system.slice/x\n1:name=systemd:/system.slice/x\n0::/system.slice/agent-box-term@alice.service\n", true},
		{"U's own user manager running a unit of that name", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/agent-box-term@alice.service\n", false},
		{"a login session", "0::/user.slice/user-1000.slice/session-3.scope\n", false},
		{"the agent unit", "0::/agent-box.slice/agent-box@alice.service\n", false},
		{"another user's term unit", "0::/system.slice/agent-box-term@bob.service\n", false},
		{"a sub-cgroup of the unit", "0::/system.slice/agent-box-term@alice.service/payload\n", false},
		{"a prefix of the unit", "0::/system.slice/agent-box-term@alice.service.evil\n", false},
		{"at the root", "0::/agent-box-term@alice.service\n", false},
		{"the root", "0::/\n", false},
		{"deleted", "0::/system.slice/agent-box-term@alice.service (deleted)\n", false},
		{"outside our cgroup namespace", "0::/../../system.slice/agent-box-term@alice.service\n", false},
		{"a bare .slice", "0::/.slice/agent-box-term@alice.service\n", false},
		{"cgroup v1 only", "1:name=systemd:/system.slice/agent-box-term@alice.service\n", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCgroup([]byte(tc.file), unit)
			if (err == nil) != tc.ok {
				t.Errorf("checkCgroup: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestInOwnUnitComparesWithThisProcesssCgroup(t *testing.T) {
	own, err := cgroupFile(0)
	if err != nil {
		t.Fatal(err)
	}
	path, ok := unifiedPath(own)
	if !ok {
		t.Fatalf("no unified line in %q", own)
	}
	err = InOwnUnit(os.Getpid())
	if strings.HasSuffix(path, ".service") && checkCgroup(own, path[strings.LastIndex(path, "/")+1:]) == nil {
		if err != nil {
			t.Errorf("this process, in %s: %v", path, err)
		}
	} else if err == nil || !strings.Contains(err.Error(), "not in a service") && !strings.Contains(err.Error(), "system slice") {
		// the test runs outside a system service (a login, a container)
		t.Errorf("this process, in %s (no system service): %v, want a refusal", path, err)
	}
	if err := InOwnUnit(1 << 30); err == nil {
		t.Error("a pid that does not exist: no error")
	}
}

func TestInSameCgroupComparesTheUnifiedLines(t *testing.T) {
	if err := InSameCgroup(os.Getpid()); err != nil {
		t.Errorf("this process: %v", err)
	}
	if err := InSameCgroup(1 << 30); err == nil {
		t.Error("a pid that does not exist: no error")
	}
}

func TestExeNamesTheProgramAndRefusesARemovedOne(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Exe(os.Getpid()); err != nil || got != self {
		t.Errorf("Exe(self) = %q, %v; want %q", got, err, self)
	}
	if _, err := Exe(1 << 30); err == nil {
		t.Error("a pid that does not exist: no error")
	}
}
