package contractscan

import (
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// unitFiles reads the verbatim units: file name -> its "Key=Value" lines.
func unitFiles(t *testing.T) map[string][]string {
	t.Helper()
	units := map[string][]string{}
	root := filepath.Join(module.Root(), "modules", "src", "units")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var lines []string
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, "=") && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		units[path.Base(p)] = lines
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return units
}

// template is the file name of a unit of the contract ("agent-box@.service"
// for "agent-box@<user>.service").
func template(unit string) string { return contract.For(unit, "") }

// TestUnitsHoldTheContractsLiterals compares every literal of the verbatim
// units that the contract also holds: each socket unit's path, listener
// name, owner and mode; the runtime directories of the units whose
// programs create their sockets; the AGENT_BOX_* variables the units set;
// the units they name.
func TestUnitsHoldTheContractsLiterals(t *testing.T) {
	units := unitFiles(t)
	has := func(unit, line string) {
		t.Helper()
		if !slices.Contains(units[unit], line) {
			t.Errorf("%s: no line %q (the contract's)", unit, line)
		}
	}
	v := reflect.ValueOf(*contract.Sockets)
	checked := 0
	for i := range v.NumField() {
		s := v.Field(i).Interface().(contract.Socket)
		name := v.Type().Field(i).Name
		if s.Unit == "caddy.service" {
			continue // nixpkgs' unit; the module sets its runtime directory
		}
		unit := template(s.Unit)
		if _, ok := units[unit]; !ok {
			t.Errorf("sockets.%s: the contract names %s, which is not a verbatim unit", name, s.Unit)
			continue
		}
		checked++
		if s.FDName != nil {
			listen, group := "ListenStream=", "root"
			if s.Datagram {
				listen = "ListenDatagram="
			}
			if s.Group != nil {
				group = *s.Group
			}
			has(unit, listen+s.For("%i"))
			has(unit, "FileDescriptorName="+*s.FDName)
			has(unit, "SocketMode="+*s.Mode)
			has(unit, "SocketUser=root")
			has(unit, "SocketGroup="+group)
			continue
		}
		// A socket its program creates, in the unit's runtime directory.
		dir := path.Dir(s.For("%i"))
		has(unit, "RuntimeDirectory="+strings.TrimPrefix(dir, "/run/"))
		has(unit, "RuntimeDirectoryMode="+*s.DirMode)
	}
	if checked < 8 {
		t.Errorf("only %d sockets checked", checked)
	}

	// The runtime directory and the ttyd socket the units hand over.
	has(template(contract.Units.Supervisor), "Environment="+contract.Env.RuntimeDir.Name+"="+contract.For(contract.Dirs.Runtime, "%i"))
	has(template(contract.Units.Sessions), "Environment="+contract.Env.RuntimeDir.Name+"="+contract.For(contract.Dirs.Runtime, "%i"))
	has(template(contract.Units.Supervisor), "ReadWritePaths="+contract.For(contract.Dirs.Runtime, "%i"))
	has(template(contract.Units.Sessions), "RequiresMountsFor="+contract.For(contract.Dirs.Runtime, "%i"))
	has(template(contract.Units.Supervisor), "Requires="+contract.For(contract.Units.Sessions, "%i"))
	has(template(contract.Units.Supervisor), "After="+contract.For(contract.Units.Sessions, "%i"))
	has(template(contract.Units.Term), "After="+contract.For(contract.Units.Sessions, "%i"))
	has(template(contract.Units.Web), "Environment="+contract.Env.TTYDSocket.Name+"="+contract.Sockets.TTYD.For("%i"))
	if got := path.Dir(contract.Sockets.Tmux.Path); got != contract.Dirs.Runtime {
		t.Errorf("the tmux socket %s is not in the runtime directory %s", contract.Sockets.Tmux.Path, contract.Dirs.Runtime)
	}

	// An app's socket and unit (their instance is the app's label), and
	// what the app's unit hides: the user's runtime directories.
	appTemplate := func(s string) string { return strings.ReplaceAll(s, "<label>", "") }
	appInstance := func(s string) string { return strings.ReplaceAll(s, "<label>", "%i") }
	a := contract.Apps
	has(appTemplate(a.Socket.Unit), "ListenStream="+appInstance(a.Socket.Path))
	has(appTemplate(a.Socket.Unit), "FileDescriptorName="+a.Socket.FDName)
	has(appTemplate(a.Socket.Unit), "SocketMode="+a.Socket.Mode)
	has(appTemplate(a.Socket.Unit), "SocketUser=root")
	has(appTemplate(a.Socket.Unit), "Service="+appInstance(a.Unit))
	has(template(contract.Units.Sessions), "ReadWritePaths=-"+path.Dir(strings.NewReplacer("<user>", "%i", "<app>", "x").Replace(a.Dir)))
	// What an app must not reach under /run is its drop-in's, rendered from
	// the contract (tests/lib/cases.nix); the template keeps /run read-only
	// and /dev/shm the unit's own.
	has(appTemplate(a.Unit), "ReadOnlyPaths=/run")
	has(appTemplate(a.Unit), "TemporaryFileSystem=/dev/shm:mode=1777,nosuid,nodev")

	// Every AGENT_BOX_* variable a unit sets is one of the contract's.
	vars := map[string]bool{}
	ev := reflect.ValueOf(*contract.Env)
	for i := range ev.NumField() {
		vars[ev.Field(i).Interface().(contract.Var).Name] = true
	}
	env := regexp.MustCompile(`^Environment=(AGENT_BOX_[A-Z_]*)=`)
	for unit, lines := range units {
		for _, l := range lines {
			if m := env.FindStringSubmatch(l); m != nil && !vars[m[1]] {
				t.Errorf("%s: %q sets a variable the contract does not hold", unit, l)
			}
		}
	}

	// The auth service takes exactly its four sockets; the hook socket
	// starts the web daemon; the web daemon needs its socket.
	auth := []string{contract.Sockets.AuthVerify.Unit, contract.Sockets.AuthPages.Unit, contract.Sockets.AuthStatus.Unit, contract.Sockets.AuthControl.Unit}
	has(contract.Units.Auth, "Sockets="+strings.Join(auth, " "))
	has(template(contract.Sockets.Hook.Unit), "Service="+contract.For(contract.Units.Web, "%i"))
	has(template(contract.Units.Web), "Requires="+contract.For(contract.Sockets.Web.Unit, "%i"))
	for _, u := range []string{contract.Units.Supervisor, contract.Units.Auth, contract.Units.Web, contract.Units.Term} {
		if _, ok := units[template(u)]; !ok {
			t.Errorf("units: %s is not a verbatim unit", u)
		}
	}
}
