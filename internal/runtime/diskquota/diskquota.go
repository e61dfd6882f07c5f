// Package diskquota sets, clears and reads a user's disk quota (bytes and
// files) on the filesystems an agent user writes, through quotactl_fd(2).
package diskquota

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
)

// Linux's numbers (include/uapi/linux/quota.h and dqblk_xfs.h;
// quotactl_fd is 443 on every architecture since Linux 5.14).
const (
	sysQuotactlFd = 443
	qGetQuota     = 0x800007
	qSetQuota     = 0x800008
	qXQuotaOn     = 0x5801 // Q_XQUOTAON: turn on the enforcement flags given
	qXGetQStat    = 0x5805 // Q_XGETQSTAT: struct fs_quota_stat
	udqAcct       = 1      // FS_QUOTA_UDQ_ACCT: user usage is kept
	udqEnfd       = 2      // FS_QUOTA_UDQ_ENFD: user limits are enforced
	usrQuota      = 0
	qifLimits     = 1 | 4 // QIF_BLIMITS | QIF_ILIMITS
	blockSize     = 1024  // QIF_DQBLKSIZE: the unit of the block limits
	tmpfsMagic    = 0x01021994
	oPath         = 0x200000 // O_PATH (not in package syscall)
)

// dqblk is struct if_dqblk.
type dqblk struct {
	bHardLimit uint64 // in blockSize units
	bSoftLimit uint64
	curSpace   uint64 // bytes
	iHardLimit uint64
	iSoftLimit uint64
	curInodes  uint64
	bTime      uint64
	iTime      uint64
	valid      uint32
	_          uint32
}

// Limit is a quota: at most Bytes and Files (0: no limit).
type Limit struct {
	Bytes uint64
	Files uint64
}

// Use is what a user owns on one filesystem and its quota there.
type Use struct {
	Bytes uint64
	Files uint64
	Limit Limit
}

var sizeRe = regexp.MustCompile(`^(?:` + contract.DiskQuota.Pattern + `)$`)

// ParseSize reads a diskQuota option's size (contract.DiskQuota.Pattern)
// into its limit: the bytes, and one file per contract BytesPerFile of
// them.
func ParseSize(s string) (Limit, error) {
	if !sizeRe.MatchString(s) {
		return Limit{}, fmt.Errorf("disk quota %s: not a size such as 20G (%s)", escape.String(s), contract.DiskQuota.Pattern)
	}
	n, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	if err != nil {
		return Limit{}, fmt.Errorf("disk quota %s: %w", escape.String(s), err)
	}
	shift := map[byte]uint{'M': 20, 'G': 30, 'T': 40}[s[len(s)-1]]
	b := n << shift
	per := uint64(contract.DiskQuota.BytesPerFile)
	return Limit{Bytes: b, Files: (b + per - 1) / per}, nil
}

// ErrOff: the filesystem keeps no user quotas: ext4 without its quota
// feature, XFS mounted without uquota.
var ErrOff = errors.New("keeps no user quotas")

// offHint says how a filesystem comes to keep user quotas.
const offHint = "(ext4: tune2fs -O quota; XFS: mount it with uquota; docs/operating.md, \"Disk\")"

// ErrUnsupported: the filesystem (or the kernel) has no user quotas.
var ErrUnsupported = errors.New("has no user quotas")

// quotactl is quotactl_fd(2); tests replace it.
var quotactl = func(fd uintptr, cmd uint32, id int, addr unsafe.Pointer) syscall.Errno {
	_, _, e := syscall.Syscall6(sysQuotactlFd, fd, uintptr(cmd), uintptr(id), uintptr(addr), 0, 0)
	return e
}

// statfs is statfs(2); tests replace it.
var statfs = syscall.Statfs

// Filesystems returns, of paths, the first path on each filesystem that
// is not a tmpfs (what a user writes to a tmpfs is charged to its memory),
// in order. A path that does not exist is left out.
func Filesystems(paths []string) ([]string, error) {
	var out []string
	seen := map[uint64]bool{}
	for _, p := range paths {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("%s: %w", escape.String(p), err)
		}
		var fs syscall.Statfs_t
		if err := statfs(p, &fs); err != nil {
			return nil, fmt.Errorf("%s: %w", escape.String(p), err)
		}
		if seen[st.Dev] || fs.Type == tmpfsMagic {
			continue
		}
		seen[st.Dev] = true
		out = append(out, p)
	}
	return out, nil
}

// Enforce makes sure the filesystem of path enforces user quota limits:
// where it keeps users' usage but does not enforce their limits (ext4 with
// the quota feature mounted without usrquota, which needs no quota tools),
// it turns enforcement on, until the filesystem is mounted again. It says
// whether it did.
func Enforce(path string) (bool, error) {
	// struct fs_quota_stat: qs_version (s8), then qs_flags (u16) at 2.
	var st [128]byte
	if err := call(path, qXGetQStat, 0, unsafe.Pointer(&st)); err != nil {
		return false, err
	}
	flags := binary.NativeEndian.Uint16(st[2:4])
	switch {
	case flags&udqAcct == 0:
		return false, fmt.Errorf("the filesystem of %s %w "+offHint, escape.String(path), ErrOff)
	case flags&udqEnfd != 0:
		return false, nil
	}
	on := uint32(udqEnfd)
	if err := call(path, qXQuotaOn, 0, unsafe.Pointer(&on)); err != nil {
		return false, err
	}
	return true, nil
}

// Set gives uid the limit l on the filesystem of path (Limit{}: none).
// Enforce first: a filesystem that keeps usage takes limits it does not
// enforce.
func Set(path string, uid int, l Limit) error {
	q := dqblk{
		bHardLimit: (l.Bytes + blockSize - 1) / blockSize,
		iHardLimit: l.Files,
		valid:      qifLimits,
	}
	q.bSoftLimit, q.iSoftLimit = q.bHardLimit, q.iHardLimit
	return call(path, qSetQuota, uid, unsafe.Pointer(&q))
}

// Get reads what uid owns on the filesystem of path and its limit there.
func Get(path string, uid int) (Use, error) {
	var q dqblk
	if err := call(path, qGetQuota, uid, unsafe.Pointer(&q)); err != nil {
		return Use{}, err
	}
	return Use{
		Bytes: q.curSpace,
		Files: q.curInodes,
		Limit: Limit{Bytes: q.bHardLimit * blockSize, Files: q.iHardLimit},
	}, nil
}

func call(path string, cmd uint32, id int, addr unsafe.Pointer) error {
	// O_PATH: the fd only names the filesystem, and needs no permission
	// on the user's 0700 home.
	fd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", escape.String(path), err)
	}
	defer syscall.Close(fd)
	switch e := quotactl(uintptr(fd), cmd<<8|usrQuota, id, addr); e {
	case 0:
		return nil
	case syscall.ESRCH:
		return fmt.Errorf("the filesystem of %s %w "+offHint, escape.String(path), ErrOff)
	case syscall.ENOSYS, syscall.EINVAL, syscall.ENOTTY, syscall.EOPNOTSUPP, syscall.ENOPKG:
		return fmt.Errorf("the filesystem of %s %w (quotactl_fd: %v; ext4 and XFS have them on Linux 5.14 or later: docs/operating.md, \"Disk\")", escape.String(path), ErrUnsupported, e)
	default:
		return fmt.Errorf("the filesystem of %s: quotactl_fd: %w", escape.String(path), e)
	}
}
