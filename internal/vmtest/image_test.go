package vmtest

import (
	"errors"
	"strings"
	"testing"
)

// aptUnmet is what apt-get install (apt 3.0, Debian 13) printed for a .deb
// whose dependencies do not exist on trixie (measured with a fake package).
const aptUnmet = `Reading package lists...
Building dependency tree...
Reading state information...
Solving dependencies...
Some packages could not be installed. This may mean that you have
requested an impossible situation or if you are using the unstable
distribution that some required packages have not yet been created
or been moved out of Incoming.
The following information may help to resolve the situation:

The following packages have unmet dependencies:
 ttyd : Depends: libwebsockets20 (>= 4.4) but it is not installable
        Depends: libnotthere but it is not installable
E: Unable to correct problems, you have held broken packages.
E: The following information from --solver 3.0 may provide additional context:
   Unable to satisfy dependencies. Reached two conflicting decisions:
   1. ttyd:amd64=1.7.8-1 is selected for install
   2. ttyd:amd64 Depends libwebsockets20 (>= 4.4)
      but none of the choices are installable:
      [no choices]
`

// TestTtydErrorNamesVersionAndUnmetDependencies: when sid's ttyd does not
// install on trixie the build fails with the version found and each missing
// dependency in its first line, not buried in apt's output.
func TestTtydErrorNamesVersionAndUnmetDependencies(t *testing.T) {
	fields := "Version: 1.7.8-1\nDepends: libwebsockets20 (>= 4.4), libjson-c5 (>= 0.15), libnotthere\n"
	err := ttydError(fields, aptUnmet, errors.New("exit status 100"))
	first, rest, _ := strings.Cut(err.Error(), "\n")
	want := "ttyd 1.7.8-1 from sid does not install on trixie (exit status 100): unmet: libwebsockets20 (>= 4.4) but it is not installable; libnotthere but it is not installable"
	if first != want {
		t.Errorf("first line:\n got %s\nwant %s", first, want)
	}
	for _, s := range []string{"its Depends: libwebsockets20 (>= 4.4), libjson-c5 (>= 0.15), libnotthere", "held broken packages", "hint: "} {
		if !strings.Contains(rest, s) {
			t.Errorf("error lacks %q:\n%s", s, err)
		}
	}
}

// TestTtydErrorWithoutAptDetail: an apt failure that names no dependency
// still says which ttyd it was and where to look.
func TestTtydErrorWithoutAptDetail(t *testing.T) {
	err := ttydError("Version: 1.7.7-8\n", "E: dpkg was interrupted\n", errors.New("exit status 100"))
	if !strings.HasPrefix(err.Error(), "ttyd 1.7.7-8 from sid does not install on trixie (exit status 100): unmet: (apt named none; see its output)") {
		t.Errorf("got %s", err)
	}
}
