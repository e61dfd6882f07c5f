// Package fail2bancheck runs Debian's fail2ban against the module's rendered
// filter and jail: fail2ban-regex for what a log line bans, fail2ban-client
// for whether the jail loads and what it sets.
package fail2bancheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Jail is the name of the module's jail and filter.
const Jail = "agent-box-auth"

// Paths of the files under /etc, as the module installs them: the filter,
// the jail and (with nftables as the firewall) the jail's ban action.
const (
	FilterPath = "etc/fail2ban/filter.d/" + Jail + ".local"
	JailPath   = "etc/fail2ban/jail.d/" + Jail + ".local"
	ActionPath = "etc/fail2ban/action.d/agent-box-nftables.local"
)

// Conf is a copy of a fail2ban configuration directory with the module's
// files added.
type Conf struct{ Dir string }

// NewConf copies base (Debian's /etc/fail2ban) into dir, leaving out
// jail.d/defaults-debian.conf (its sshd jail needs an sshd log this machine
// does not have), and writes files (path under /etc, as FilterPath, ->
// bytes).
func NewConf(base, dir string, files map[string]string) (*Conf, error) {
	err := filepath.Walk(base, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		to := filepath.Join(dir, rel)
		switch {
		case info.IsDir():
			return os.MkdirAll(to, 0o755)
		case rel == filepath.Join("jail.d", "defaults-debian.conf"):
			return nil
		case !info.Mode().IsRegular():
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("copying %s: %w", base, err)
	}
	for rel, text := range files {
		rel, ok := strings.CutPrefix(rel, "etc/fail2ban/")
		if !ok {
			return nil, fmt.Errorf("%s is not under etc/fail2ban/", rel)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	return &Conf{Dir: dir}, nil
}

// Banned returns, in order, the address each log line would count a
// failure against (fail2ban-regex -o ip).
func (c *Conf) Banned(bin string, lines []string) ([]string, error) {
	log := filepath.Join(c.Dir, "lines.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	out, err := exec.Command(bin, "-c", c.Dir, "-o", "ip", log, Jail).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("fail2ban-regex: %v\n%s", err, out)
	}
	var ips []string
	for _, l := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ips = append(ips, l)
		}
	}
	return ips, nil
}

// Load checks the configuration (fail2ban-client -t) and returns the
// jail's settings as fail2ban-client -d dumps them (one line each).
func (c *Conf) Load(bin string) ([]string, error) {
	if out, err := exec.Command(bin, "-c", c.Dir, "-t").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("fail2ban-client -t: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-c", c.Dir, "-d").Output()
	if err != nil {
		return nil, fmt.Errorf("fail2ban-client -d: %v", err)
	}
	var jail []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "['set', '"+Jail+"', ") || strings.HasPrefix(l, "['add', '"+Jail+"', ") || strings.HasPrefix(l, "['multi-set', '"+Jail+"', ") {
			jail = append(jail, l)
		}
	}
	return jail, nil
}
