package cli

import (
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/diskquota"
	"github.com/agent-box/agent-box/internal/runtime/uploads"
)

// diskUsage is `agent-box disk`'s usage line.
const diskUsage = "usage: disk | disk set USER SIZE | disk clear USER"

// disk is `agent-box disk`: the running user's disk use and quota, or, as
// root (the user's quota unit), setting and clearing a user's quota.
func (p *Program) disk(args []string) error {
	switch {
	case len(args) == 0:
		u, err := user.Current()
		if err != nil {
			return fmt.Errorf("disk: who is running: %w", err)
		}
		return p.diskShow(u)
	case len(args) == 3 && args[0] == "set":
		l, err := diskquota.ParseSize(args[2])
		if err != nil {
			return usagef("%v", err)
		}
		return p.diskSet(args[1], l)
	case len(args) == 2 && args[0] == "clear":
		return p.diskSet(args[1], diskquota.Limit{})
	}
	return usagef("%s", diskUsage)
}

// diskPlaces returns the user's uid and the first path of each filesystem
// the quota binds (diskquota.Filesystems leaves a tmpfs out): where the
// user writes, its home, its units' private temporary directories
// (systemd's PrivateTmp= makes them under /var/tmp and /tmp) and its
// apps' state (contract apps.stateDirectory, under /var/lib), in that
// order (the quota unit's drop-in makes the last writable there).
func diskPlaces(u *user.User) (int, []string, error) {
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return 0, nil, fmt.Errorf("disk: %s: uid %q: %w", u.Username, u.Uid, err)
	}
	apps := filepath.Join("/var/lib", filepath.Dir(contract.For(contract.Apps.StateDirectory, u.Username)))
	fss, err := diskquota.Filesystems([]string{u.HomeDir, "/var/tmp", "/tmp", apps})
	if err != nil {
		return 0, nil, fmt.Errorf("disk: %w", err)
	}
	return uid, fss, nil
}

func (p *Program) diskShow(u *user.User) error {
	uid, fss, err := diskPlaces(u)
	if err != nil {
		return err
	}
	for _, fs := range fss {
		use, err := diskquota.Get(fs, uid)
		switch {
		case errors.Is(err, diskquota.ErrOff), errors.Is(err, diskquota.ErrUnsupported):
			fmt.Fprintf(p.Stdout, "%s: no quota (%v)\n", fs, err)
		case err != nil:
			return fmt.Errorf("disk: %w", err)
		case use.Limit == diskquota.Limit{}:
			fmt.Fprintf(p.Stdout, "%s: %s in %d files; no quota\n", fs, uploads.Size(int64(use.Bytes)), use.Files)
		default:
			fmt.Fprintf(p.Stdout, "%s: %s of %s, %d of %d files\n", fs,
				uploads.Size(int64(use.Bytes)), uploads.Size(int64(use.Limit.Bytes)), use.Files, use.Limit.Files)
		}
	}
	return nil
}

// diskSet gives the user the limit l on each filesystem (Limit{}: takes
// it away, where quotas are on) and says what the user owns there.
func (p *Program) diskSet(name string, l diskquota.Limit) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	uid, fss, err := diskPlaces(u)
	if err != nil {
		return err
	}
	for _, fs := range fss {
		if l != (diskquota.Limit{}) {
			on, err := diskquota.Enforce(fs)
			if err != nil {
				return fmt.Errorf("disk: %s: %w", name, err)
			}
			if on {
				fmt.Fprintf(p.Stdout, "%s: turned on the enforcement of user quotas on the filesystem of %s (until it is mounted again)\n", name, fs)
			}
		}
		err := diskquota.Set(fs, uid, l)
		if l == (diskquota.Limit{}) && (errors.Is(err, diskquota.ErrOff) || errors.Is(err, diskquota.ErrUnsupported)) {
			fmt.Fprintf(p.Stdout, "%s: no quota to clear on the filesystem of %s\n", name, fs)
			continue
		}
		if err != nil {
			return fmt.Errorf("disk: %s: %w", name, err)
		}
		use, err := diskquota.Get(fs, uid)
		if err != nil {
			return fmt.Errorf("disk: %s: %w", name, err)
		}
		if l == (diskquota.Limit{}) {
			fmt.Fprintf(p.Stdout, "%s: no disk quota on the filesystem of %s (uses %s in %d files)\n", name, fs, uploads.Size(int64(use.Bytes)), use.Files)
			continue
		}
		fmt.Fprintf(p.Stdout, "%s: disk quota %s and %d files on the filesystem of %s (uses %s in %d files)\n", name,
			uploads.Size(int64(use.Limit.Bytes)), use.Limit.Files, fs, uploads.Size(int64(use.Bytes)), use.Files)
	}
	return nil
}
