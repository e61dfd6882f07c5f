// Package textdiff explains how two texts differ, for stale generated files
// and drifting goldens: a unified diff when lines differ, words when the
// difference is one a line diff cannot show (CR, a final newline, a line too
// long to diff).
package textdiff

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/pkg/diff"
)

// maxLine is the longest line the line differ accepts (bufio.ScanLines).
const maxLine = 64 * 1024

// Explain returns "" when want and got are equal, and otherwise a
// human-readable account of the difference, labelled wantName and gotName.
func Explain(wantName, gotName string, want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	if longestLine(want) < maxLine && longestLine(got) < maxLine {
		var b strings.Builder
		if err := diff.Text(wantName, gotName, want, got, &b); err == nil && hasHunk(b.String()) {
			return b.String()
		}
	}
	return words(wantName, gotName, want, got)
}

func hasHunk(s string) bool {
	return strings.Contains(s, "\n@@ ") || strings.HasPrefix(s, "@@ ")
}

func longestLine(b []byte) int {
	n := 0
	for _, l := range bytes.Split(b, []byte("\n")) {
		n = max(n, len(l))
	}
	return n
}

// words describes a difference the line diff cannot show.
func words(wantName, gotName string, want, got []byte) string {
	var notes []string
	if bytes.Contains(want, []byte("\r")) != bytes.Contains(got, []byte("\r")) {
		notes = append(notes, fmt.Sprintf("only one of them contains CR bytes (%s: %d, %s: %d)",
			wantName, bytes.Count(want, []byte("\r")), gotName, bytes.Count(got, []byte("\r"))))
	}
	wantNL, gotNL := bytes.HasSuffix(want, []byte("\n")), bytes.HasSuffix(got, []byte("\n"))
	if wantNL != gotNL {
		which := gotName
		if !wantNL {
			which = wantName
		}
		notes = append(notes, fmt.Sprintf("%s lacks a final newline", which))
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	line := 1 + bytes.Count(want[:i], []byte("\n"))
	notes = append(notes, fmt.Sprintf("first difference at byte %d (line %d); %s has %d bytes, %s has %d",
		i, line, wantName, len(want), gotName, len(got)))
	return fmt.Sprintf("--- %s\n+++ %s\n%s\n", wantName, gotName, strings.Join(notes, "; "))
}
