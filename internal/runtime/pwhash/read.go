package pwhash

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unsafe"
)

// MaxLen bounds the line `agent-box web hash-password` reads.
const MaxLen = 4096

// Input errors of Read.
var (
	ErrEmpty   = errors.New("the password is empty")
	ErrTooLong = fmt.Errorf("the password is longer than %d bytes", MaxLen)
)

// Read reads one line from in (its line ending removed). When in
// is a terminal it prompts on prompt and turns echo off while reading; the
// terminal is restored afterwards, also when SIGINT, SIGTERM or SIGHUP
// interrupts the read.
func Read(in io.Reader, prompt io.Writer) (string, error) {
	var pw string
	var err error
	if f, ok := in.(*os.File); ok {
		if old, terr := getTermios(f.Fd()); terr == nil {
			pw, err = readTerminal(f, old, prompt)
		} else {
			pw, err = readLine(in)
		}
	} else {
		pw, err = readLine(in)
	}
	if err == nil && pw == "" {
		err = ErrEmpty
	}
	return pw, err
}

func readLine(in io.Reader) (string, error) {
	br := bufio.NewReader(io.LimitReader(in, MaxLen+2))
	line, err := br.ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("read the password: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if len(line) > MaxLen {
		return "", ErrTooLong
	}
	return line, nil
}

func readTerminal(f *os.File, old syscall.Termios, prompt io.Writer) (string, error) {
	noEcho := old
	noEcho.Lflag &^= syscall.ECHO
	io.WriteString(prompt, "Password: ")
	if err := setTermios(f.Fd(), &noEcho); err != nil {
		return "", fmt.Errorf("turn the terminal's echo off: %w", err)
	}
	restore := func() {
		setTermios(f.Fd(), &old)
		io.WriteString(prompt, "\n")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() {
		s, err := readLine(f)
		got <- line{s, err}
	}()
	select {
	case l := <-got:
		restore()
		return l.s, l.err
	case s := <-sig:
		restore()
		return "", fmt.Errorf("interrupted by %v", s)
	}
}

func getTermios(fd uintptr) (syscall.Termios, error) {
	var t syscall.Termios
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&t))); e != 0 {
		return t, e
	}
	return t, nil
}

func setTermios(fd uintptr, t *syscall.Termios) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(t))); e != 0 {
		return e
	}
	return nil
}
