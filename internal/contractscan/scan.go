// Package contractscan finds copies of the contract's rules outside the contract.
//
// It finds copies of the contract's rules
// (internal/runtime/contract) outside the contract: every string value of
// the contract of six bytes or more, with "<user>", "<app>", "<label>" (and
// a Caddy matcher's "*") matching any short argument (a name, %i, ${u}), and each fixed
// piece of such a template on its own (except a bare file suffix such as
// ".sock", and a bare name prefix such as "agent-box-", which begins half
// the names of the product: the template itself still matches). Prose fields (what a rule
// is for) are not rules and are not scanned, nor is a value that is one
// lowercase word (a listener's name such as "verify" or "status"): such a
// word is everywhere in code and prose, and its uses are tied to the
// contract otherwise (the runtime reads it from the contract; the units'
// FileDescriptorName= lines are compared with it).
package contractscan

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// MinLen is the shortest contract string scanned for.
const MinLen = 6

// prose are the contract's keys whose values describe a rule.
var prose = map[string]bool{"what": true, "clients": true, "short": true, "meaning": true, "reader": true}

// Probe is one contract string and how to find it.
type Probe struct {
	Key  string // the contract key path, e.g. "sockets.web.path"
	Text string // the string (or a fixed piece of a template)
	re   *regexp.Regexp
}

// Hit is one copy of a probe in a file.
type Hit struct {
	File string
	Line int
	Key  string
	Text string
}

func (h Hit) String() string { return fmt.Sprintf("%s:%d: %s (%s)", h.File, h.Line, h.Text, h.Key) }

var (
	placeholder = regexp.MustCompile(`<user>|<app>|<label>|\*`)
	suffix      = regexp.MustCompile(`^\.[a-z]+$|^[a-z]+(-[a-z]+)*-$`)
	word        = regexp.MustCompile(`^[a-z]+$`)
)

// Probes lists what Scan looks for in the contract's JSON.
func Probes(contractJSON []byte) ([]Probe, error) {
	var v any
	if err := json.Unmarshal(contractJSON, &v); err != nil {
		return nil, err
	}
	var out []Probe
	seen := map[string]bool{}
	add := func(key, text string, re *regexp.Regexp) {
		if len(text) < MinLen || seen[text] || word.MatchString(text) {
			return
		}
		seen[text] = true
		out = append(out, Probe{Key: key, Text: text, re: re})
	}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if prose[k] {
					continue
				}
				sub := k
				if key != "" {
					sub = key + "." + k
				}
				walk(sub, v[k])
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", key, i), e)
			}
		case string:
			pieces := placeholder.Split(v, -1)
			if len(pieces) == 1 {
				add(key, v, regexp.MustCompile(regexp.QuoteMeta(v)))
				return
			}
			// The whole template, with any short argument in place of
			// each placeholder (a name, %i, ${u}), unless its fixed
			// text is too short to tell it from anything ("<app>--<user>").
			if len(strings.Join(pieces, "")) < MinLen {
				return
			}
			quoted := make([]string, len(pieces))
			for i, p := range pieces {
				quoted[i] = regexp.QuoteMeta(p)
			}
			add(key, v, regexp.MustCompile(strings.Join(quoted, `[^\s"'`+"`"+`]{0,40}?`)))
			for _, p := range pieces {
				if !suffix.MatchString(p) {
					add(key, p, regexp.MustCompile(regexp.QuoteMeta(p)))
				}
			}
		}
	}
	walk("", v)
	return out, nil
}

// Scan returns the copies of the probes in one file, one hit per probe
// and line (the longest probe at a place wins).
func Scan(file string, data []byte, probes []Probe) []Hit {
	var hits []Hit
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		var covered [][2]int
		ps := append([]Probe(nil), probes...)
		sort.SliceStable(ps, func(a, b int) bool { return len(ps[a].Text) > len(ps[b].Text) })
	probe:
		for _, p := range ps {
			for _, m := range p.re.FindAllStringIndex(line, -1) {
				if !bounded(line, m[0], m[1]) {
					continue
				}
				for _, c := range covered {
					if m[0] >= c[0] && m[1] <= c[1] {
						continue probe
					}
				}
				covered = append(covered, [2]int{m[0], m[1]})
				hits = append(hits, Hit{File: file, Line: i + 1, Key: p.Key, Text: line[m[0]:m[1]]})
				continue probe
			}
		}
	}
	return hits
}

func isWord(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// bounded reports whether line[i:j] stands on its own: a match that
// starts (ends) with a word character must not continue a word before
// (after) it, so "caddy.service" is not found in "caddy.serviceConfig".
func bounded(line string, i, j int) bool {
	if isWord(line[i]) && i > 0 && isWord(line[i-1]) {
		return false
	}
	if isWord(line[j-1]) && j < len(line) && isWord(line[j]) {
		return false
	}
	return true
}
