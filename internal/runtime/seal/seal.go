// Package seal runs a program that can start no other. The web terminal
// attaches the operator to an agent's tmux session with a tmux client that
// runs in agent-box-term@U; that client executes what the tmux server asks
// of it (`detach-client -E CMD`, the lock command), and every process of
// U's uid controls that server, so without the seal U's agent could run
// its own program beside ttyd and take its socket (docs/web-contract.md).
//
// Exec installs, on the calling thread, a seccomp filter that refuses
// every execve and every execveat but one shape no program uses
// (AT_EMPTY_PATH|AT_SYMLINK_NOFOLLOW on a descriptor), then starts the
// program with exactly that call. The filter is inherited by the program
// and everything it forks, and cannot be removed: any later exec fails
// with EPERM. Linux on amd64 and arm64; elsewhere Exec refuses.
package seal

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// ErrUnsupported is an architecture without a filter here.
var ErrUnsupported = errors.New("seal: no exec filter for this architecture")

const (
	prSetNoNewPrivs   = 38
	seccompModeFilter = 2
	oPath             = 0x200000
	atEmptyPath       = 0x1000
	atSymlinkNofollow = 0x100
	// key is the flags of the one exec the filter lets through.
	key = atEmptyPath | atSymlinkNofollow

	retAllow = 0x7fff0000
	retErrno = 0x00050000
	retKill  = 0x80000000 // SECCOMP_RET_KILL_PROCESS

	bpfLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgeK   = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	bpfRetK   = 0x06 // BPF_RET | BPF_K

	// offsets in struct seccomp_data
	offNr    = 0
	offArch  = 4
	offFlags = 16 + 8*4 // args[4] of execveat: its low 32 bits (little endian)
)

type sockFilter struct {
	code uint16
	jt   uint8
	jf   uint8
	k    uint32
}

type sockFprog struct {
	len    uint16
	filter *sockFilter
}

// filter is the program: kill another ABI (i386, x32), refuse execve,
// refuse execveat unless its flags are key (both 32-bit halves), allow
// everything else.
func filter(a arch) []sockFilter {
	eperm := uint32(retErrno | uint32(syscall.EPERM))
	return []sockFilter{
		{bpfLdWAbs, 0, 0, offArch},
		{bpfJeqK, 1, 0, a.audit},
		{bpfRetK, 0, 0, retKill},
		{bpfLdWAbs, 0, 0, offNr},
		{bpfJgeK, 0, 1, a.abiBit}, // x32 on amd64; never on arm64
		{bpfRetK, 0, 0, retKill},
		{bpfJeqK, 0, 1, a.execve},
		{bpfRetK, 0, 0, eperm},
		{bpfJeqK, 1, 0, a.execveat},
		{bpfRetK, 0, 0, retAllow},
		{bpfLdWAbs, 0, 0, offFlags},
		{bpfJeqK, 0, 3, key},
		{bpfLdWAbs, 0, 0, offFlags + 4},
		{bpfJeqK, 0, 1, 0},
		{bpfRetK, 0, 0, retAllow},
		{bpfRetK, 0, 0, eperm},
	}
}

// arch is what the filter needs of an architecture.
type arch struct {
	audit            uint32 // AUDIT_ARCH_*
	abiBit           uint32 // the lowest syscall number of another ABI
	execve, execveat uint32
}

// Exec replaces this process with path (argv, env) sealed. It returns only
// on failure; the calling thread may then be sealed too.
func Exec(path string, argv, env []string) error {
	a, ok := current()
	if !ok {
		return ErrUnsupported
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	empty, _ := syscall.BytePtrFromString("")
	prog := filter(a)
	fprog := sockFprog{len: uint16(len(prog)), filter: &prog[0]}

	runtime.LockOSThread() // the filter and the exec on one thread; never unlocked
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); e != 0 {
		return fmt.Errorf("seal: prctl(PR_SET_NO_NEW_PRIVS): %w", e)
	}
	fd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("seal: %s: %w", path, err)
	}
	// prctl, not seccomp(2): systemd's @system-service allows the first
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_SECCOMP, seccompModeFilter, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		syscall.Close(fd)
		return fmt.Errorf("seal: prctl(PR_SET_SECCOMP): %w", e)
	}
	_, _, e := syscall.RawSyscall6(uintptr(a.execveat), uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), key, 0)
	runtime.KeepAlive(prog)
	return fmt.Errorf("seal: execveat %s: %w", path, e)
}
