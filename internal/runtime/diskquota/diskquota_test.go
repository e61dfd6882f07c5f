package diskquota

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func TestParseSizeReadsTheOptionsSizesAndGivesAFilePerBytesPerFile(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Limit
	}{
		// 16384 bytes a file (contract diskQuota.bytesPerFile)
		{"300M", Limit{Bytes: 300 << 20, Files: 19200}},
		{"20G", Limit{Bytes: 20 << 30, Files: 1310720}},
		{"2T", Limit{Bytes: 2 << 40, Files: 134217728}},
		{"1M", Limit{Bytes: 1 << 20, Files: 64}},
		{"999999T", Limit{Bytes: 999999 << 40, Files: 999999 << 26}},
	} {
		got, err := ParseSize(tc.in)
		if err != nil {
			t.Errorf("ParseSize(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseSize(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseSizeRefusesWhatTheOptionRefuses(t *testing.T) {
	for _, in := range []string{"", "0G", "020G", "20", "20GB", "20g", "1.5G", "20K", "1234567T", " 20G", "-1G"} {
		if l, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %+v, want an error", in, l)
		} else if !strings.Contains(err.Error(), "not a size such as 20G") {
			t.Errorf("ParseSize(%q): %v, want it to say what a size is", in, err)
		}
	}
}

// qcall is one quotactl_fd call a fake saw.
type qcall struct {
	Cmd uint32
	ID  int
}

// fake replaces quotactl for a test: it records each call and answers
// with answer (which may fill addr).
func fake(t *testing.T, answer func(cmd uint32, addr unsafe.Pointer) syscall.Errno) *[]qcall {
	t.Helper()
	var calls []qcall
	old := quotactl
	quotactl = func(fd uintptr, cmd uint32, id int, addr unsafe.Pointer) syscall.Errno {
		calls = append(calls, qcall{cmd, id})
		return answer(cmd, addr)
	}
	t.Cleanup(func() { quotactl = old })
	return &calls
}

func TestSetGivesHardAndSoftLimitsInKiBRoundedUp(t *testing.T) {
	var got dqblk
	calls := fake(t, func(_ uint32, addr unsafe.Pointer) syscall.Errno {
		got = *(*dqblk)(addr)
		return 0
	})
	if err := Set(t.TempDir(), 1001, Limit{Bytes: 1025, Files: 3}); err != nil {
		t.Fatal(err)
	}
	want := dqblk{bHardLimit: 2, bSoftLimit: 2, iHardLimit: 3, iSoftLimit: 3, valid: 1 | 4}
	if got != want {
		t.Errorf("if_dqblk = %+v, want %+v", got, want)
	}
	// QCMD(Q_SETQUOTA, USRQUOTA)
	if diff := cmp.Diff([]qcall{{0x80000800, 1001}}, *calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestSetWithNoLimitClearsBoth(t *testing.T) {
	var got dqblk
	fake(t, func(_ uint32, addr unsafe.Pointer) syscall.Errno {
		got = *(*dqblk)(addr)
		return 0
	})
	if err := Set(t.TempDir(), 1001, Limit{}); err != nil {
		t.Fatal(err)
	}
	if want := (dqblk{valid: 1 | 4}); got != want {
		t.Errorf("if_dqblk = %+v, want %+v", got, want)
	}
}

func TestGetReadsUseInBytesAndLimitsFromKiB(t *testing.T) {
	calls := fake(t, func(_ uint32, addr unsafe.Pointer) syscall.Errno {
		*(*dqblk)(addr) = dqblk{bHardLimit: 307200, bSoftLimit: 307200, curSpace: 49152, iHardLimit: 19200, curInodes: 12}
		return 0
	})
	got, err := Get(t.TempDir(), 1002)
	if err != nil {
		t.Fatal(err)
	}
	want := Use{Bytes: 49152, Files: 12, Limit: Limit{Bytes: 300 << 20, Files: 19200}}
	if got != want {
		t.Errorf("Get = %+v, want %+v", got, want)
	}
	// QCMD(Q_GETQUOTA, USRQUOTA)
	if diff := cmp.Diff([]qcall{{0x80000700, 1002}}, *calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestErrorsSayWhatTheFilesystemLacksAndWhatToDo(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		errno syscall.Errno
		is    error
		says  string
	}{
		{syscall.ESRCH, ErrOff, "keeps no user quotas (ext4: tune2fs -O quota; XFS: mount it with uquota"},
		{syscall.ENOSYS, ErrUnsupported, "has no user quotas (quotactl_fd: function not implemented; ext4 and XFS have them on Linux 5.14 or later"},
		{syscall.EOPNOTSUPP, ErrUnsupported, "has no user quotas"},
		{syscall.EPERM, syscall.EPERM, "quotactl_fd: operation not permitted"},
	} {
		fake(t, func(uint32, unsafe.Pointer) syscall.Errno { return tc.errno })
		err := Set(dir, 1001, Limit{Bytes: 1 << 20})
		if !errors.Is(err, tc.is) {
			t.Errorf("%v: %v, want errors.Is %v", tc.errno, err, tc.is)
		}
		if err == nil || !strings.Contains(err.Error(), "the filesystem of "+dir) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v, want it to name %s and say %q", tc.errno, err, dir, tc.says)
		}
	}
}

func TestAMissingPathIsNamed(t *testing.T) {
	fake(t, func(uint32, unsafe.Pointer) syscall.Errno { t.Error("quotactl_fd called"); return 0 })
	p := filepath.Join(t.TempDir(), "gone")
	if _, err := Get(p, 1001); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), p) {
		t.Errorf("Get(%s): %v, want a not-exist error naming it", p, err)
	}
}

// stat answers Q_XGETQSTAT with flags.
func stat(flags uint16, cmd uint32, addr unsafe.Pointer) syscall.Errno {
	if cmd == 0x580500 { // QCMD(Q_XGETQSTAT, USRQUOTA)
		b := (*[128]byte)(addr)
		binary.NativeEndian.PutUint16(b[2:4], flags)
	}
	return 0
}

func TestEnforceTurnsOnLimitsWhereUsageIsKeptAndOnlyThere(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		flags uint16
		on    bool
		calls []qcall
		err   error
	}{
		{"usage kept, limits not enforced: turned on", 1, true, []qcall{{0x580500, 0}, {0x580100, 0}}, nil},
		{"already enforced: left alone", 1 | 2, false, []qcall{{0x580500, 0}}, nil},
		{"no usage kept: nothing to enforce", 0, false, []qcall{{0x580500, 0}}, ErrOff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var flags uint32
			calls := fake(t, func(cmd uint32, addr unsafe.Pointer) syscall.Errno {
				if cmd == 0x580100 { // QCMD(Q_XQUOTAON, USRQUOTA)
					flags = *(*uint32)(addr)
				}
				return stat(tc.flags, cmd, addr)
			})
			on, err := Enforce(dir)
			if on != tc.on || !errors.Is(err, tc.err) {
				t.Errorf("Enforce = %v, %v, want %v, %v", on, err, tc.on, tc.err)
			}
			if diff := cmp.Diff(tc.calls, *calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if tc.on && flags != 2 { // FS_QUOTA_UDQ_ENFD
				t.Errorf("Q_XQUOTAON flags = %#x, want FS_QUOTA_UDQ_ENFD", flags)
			}
		})
	}
}

func TestFilesystemsKeepsTheFirstPathOfEachAndLeavesOutMissingAndTmpfs(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	old := statfs
	t.Cleanup(func() { statfs = old })
	as := func(fsType int64) {
		statfs = func(p string, st *syscall.Statfs_t) error {
			err := old(p, st)
			st.Type = fsType
			return err
		}
	}
	as(0xef53) // ext4, whatever the host's temporary directory is
	got, err := Filesystems([]string{a, filepath.Join(a, "missing"), b})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{a}, got); diff != "" {
		t.Errorf("one filesystem (-want +got):\n%s", diff)
	}
	as(tmpfsMagic)
	if got, err := Filesystems([]string{a, b}); err != nil || len(got) != 0 {
		t.Errorf("tmpfs: %q, %v, want none", got, err)
	}
}
