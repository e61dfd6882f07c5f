package assemble

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"strings"
)

// IgnoreFile is the name of the optional file in an included directory that
// lists what the directory include skips.
const IgnoreFile = ".assemble-ignore"

// ignoreRules is a parsed .assemble-ignore: one glob (path.Match syntax) per
// line; blank lines and lines starting with '#' are comments. A pattern is
// matched against the slash-separated path relative to the included
// directory and against the base name. A pattern matches files and
// directories (a matched directory is skipped whole); one ending in "/"
// matches directories only.
type ignoreRules struct {
	files, dirs []string
}

func parseIgnore(data []byte) (ignoreRules, error) {
	var r ignoreRules
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pat, isDir := strings.CutSuffix(line, "/")
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			return r, fmt.Errorf("line %d: bad pattern %q", n, line)
		}
		if isDir {
			r.dirs = append(r.dirs, pat)
		} else {
			r.files = append(r.files, pat)
		}
	}
	return r, sc.Err()
}

func (r ignoreRules) match(rel string, isDir bool) bool {
	pats := r.files
	if isDir {
		pats = append(append([]string(nil), r.files...), r.dirs...)
	}
	base := path.Base(rel)
	for _, p := range pats {
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
		if ok, _ := path.Match(p, base); ok {
			return true
		}
	}
	return false
}
