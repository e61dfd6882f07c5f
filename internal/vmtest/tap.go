package vmtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// TAP is one scenario phase's report. The contract (tests/scenarios/lib.sh
// writes it): CRs are stripped (the guest tty adds them); a plan line "1..N"
// is required; test lines are "ok N - text" or "not ok N - text"; lines
// starting with "#" are diagnostics of the test before them; a final "# END"
// is required. Anything else (kernel noise) is kept as diagnostics too.
type TAP struct {
	Plan  int
	Tests []TAPTest
	End   bool
	Notes []string // diagnostics before the first test
}

// TAPTest is one test line and its diagnostics.
type TAPTest struct {
	Num   int
	OK    bool
	Desc  string
	Diags []string
}

var (
	planRe = regexp.MustCompile(`^1\.\.(\d+)$`)
	testRe = regexp.MustCompile(`^(ok|not ok) (\d+)(?: -)? ?(.*)$`)
)

// ParseTAP reads a report. It returns what it could parse and an error when
// the report breaks the contract (missing plan or END, count mismatch).
// onLine, if not nil, sees every line (CR stripped) as it arrives.
func ParseTAP(r io.Reader, onLine func(string)) (*TAP, error) {
	t := &TAP{Plan: -1}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.ReplaceAll(sc.Text(), "\r", "")
		if onLine != nil {
			onLine(line)
		}
		if t.End {
			continue
		}
		switch {
		case line == "# END":
			t.End = true
		case planRe.MatchString(line) && t.Plan < 0:
			t.Plan, _ = strconv.Atoi(planRe.FindStringSubmatch(line)[1])
		case testRe.MatchString(line):
			m := testRe.FindStringSubmatch(line)
			n, _ := strconv.Atoi(m[2])
			t.Tests = append(t.Tests, TAPTest{Num: n, OK: m[1] == "ok", Desc: m[3]})
		case len(t.Tests) > 0:
			last := &t.Tests[len(t.Tests)-1]
			last.Diags = append(last.Diags, line)
		default:
			t.Notes = append(t.Notes, line)
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("reading TAP: %w", err)
	}
	var errs []error
	if t.Plan < 0 {
		errs = append(errs, errors.New("TAP: no plan line (1..N)"))
	}
	if !t.End {
		errs = append(errs, errors.New("TAP: no final '# END' (the phase did not finish)"))
	}
	if t.Plan >= 0 && t.Plan != len(t.Tests) {
		errs = append(errs, fmt.Errorf("TAP: plan says %d tests, report has %d", t.Plan, len(t.Tests)))
	}
	for i, tt := range t.Tests {
		if tt.Num != i+1 {
			errs = append(errs, fmt.Errorf("TAP: test %d is numbered %d", i+1, tt.Num))
			break
		}
	}
	return t, errors.Join(errs...)
}
