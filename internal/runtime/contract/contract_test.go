package contract

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAMisspeltKeyIsRefused: the decoder refuses a key the Go side does
// not read (a misspelt key would leave a rule empty) and data after the
// object.
func TestAMisspeltKeyIsRefused(t *testing.T) {
	for name, data := range map[string]string{
		"unknown key":   `{"names": {"usr": {"pattern": "x"}}}`,
		"trailing data": `{} {}`,
	} {
		if _, err := Parse([]byte(data)); err == nil {
			t.Errorf("%s: Parse(%q) succeeded", name, data)
		}
	}
}

// TestEveryStringIsSet: no rule of the contract is empty (every string
// field of every part, prose included, and every exit code has a text).
func TestEveryStringIsSet(t *testing.T) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(path+"."+v.Type().Field(i).Name, v.Field(i))
				}
			}
		case reflect.String:
			if v.String() == "" {
				t.Errorf("%s is empty", path)
			}
		}
	}
	walk("contract", reflect.ValueOf(c))
}

// names calls f with the key path and value of every Name in the contract.
func names(f func(path string, n Name)) { namesOf(&c, f) }

// namesOf is names of the contract k.
func namesOf(k *Contract, f func(path string, n Name)) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		if n, ok := v.Interface().(Name); ok {
			f(path, n)
			return
		}
		if v.Kind() != reflect.Struct {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		}
	}
	walk("contract", reflect.ValueOf(*k))
}

// TestPatternsAreInTheSharedSubset: every pattern (names and formats) is
// one that RE2 and Nix's builtins.match (POSIX extended) read alike: no
// Perl classes, no lazy or possessive quantifiers, no anchors (Nix matches
// the whole string), no non-capturing groups, no backslash inside a
// bracket expression (a literal in POSIX, an escape in RE2). What each
// accepts is checked on both sides by the shared case table
// (internal/contractcases).
func TestPatternsAreInTheSharedSubset(t *testing.T) {
	bad := regexp.MustCompile(`\\[dwsDWSbB]|\(\?|[*+?}]\?|[*+}]\+|\^|\$|\[[^\]]*\\`)
	count := 0
	// Parse compiles every pattern (the program's contract compiles each at
	// its first use, and would panic on one that does not compile).
	k, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	namesOf(k, func(path string, n Name) {
		count++
		if m := bad.FindString(n.Pattern); m != "" {
			t.Errorf("%s: %q uses %q, which RE2 and POSIX ERE read differently", path, n.Pattern, m)
		}
		if n.re == nil {
			t.Errorf("%s: not compiled", path)
		}
	})
	if count < 8 {
		t.Errorf("only %d patterns", count)
	}
}

// TestEveryFieldIsInTheFile: a key the file lacks would decode as an
// empty value silently; every field the Go side reads is in the file.
func TestEveryFieldIsInTheFile(t *testing.T) {
	var file map[string]any
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, typ reflect.Type, v any)
	walk = func(path string, typ reflect.Type, v any) {
		if typ.Kind() != reflect.Struct {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s: want an object", path)
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Anonymous {
				walk(path, f.Type, v)
				continue
			}
			key := strings.Split(f.Tag.Get("json"), ",")[0]
			sub, ok := m[key]
			if !ok {
				t.Errorf("%s.%s: missing from contract.json", path, key)
				continue
			}
			walk(path+"."+key, f.Type, sub)
		}
	}
	walk("contract", reflect.TypeOf(c), file)
}

// TestLimitsAreOrdered: every range has 0 < min <= default <= max, the
// durations are Go durations, and the hand-over cookie's path is a page of
// the auth service (Caddy gives /auth/* of a user origin to it).
func TestLimitsAreOrdered(t *testing.T) {
	iv := c.Web.TerminalCheckInterval
	var ds [3]time.Duration
	for i, v := range []string{iv.Min, iv.Default, iv.Max} {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("terminalCheckInterval: %v", err)
		}
		ds[i] = d
	}
	if !(0 < ds[0] && ds[0] <= ds[1] && ds[1] <= ds[2]) {
		t.Errorf("terminalCheckInterval: want 0 < min <= default <= max, got %+v", iv)
	}
	if lo, hi := Duration(c.Attention.SilenceAfter.Min), Duration(c.Attention.SilenceAfter.Max); !(time.Second <= lo && lo < hi) || lo%time.Second != 0 || hi%time.Second != 0 {
		t.Errorf("attention.silenceAfter: want whole seconds, 1s <= min < max (tmux counts seconds), got %+v", c.Attention.SilenceAfter)
	}
	for _, d := range []string{c.Web.SessionLifetime.Default, c.Web.SessionLifetime.Min, c.Web.IdleTimeout.Default, c.Web.IdleTimeout.Min, c.Webhooks.RetentionMin, c.UsageLimits.AgentRetry, c.UsageLimits.TurnRead.Every, c.UsageLimits.TurnRead.Grace} {
		if v, err := time.ParseDuration(d); err != nil || v <= 0 {
			t.Errorf("%q is not a positive Go duration", d)
		}
	}
	for name, iv := range map[string]Interval{"wait": c.Approvals.Wait, "actionLifetime": c.Approvals.ActionLifetime} {
		lo, def, hi := Duration(iv.Min), Duration(iv.Default), Duration(iv.Max)
		if !(0 < lo && lo <= def && def <= hi) {
			t.Errorf("approvals.%s: want 0 < min <= default <= max, got %+v", name, iv)
		}
	}
	// Claude kills a hook at its timeout: the hook's own wait (the
	// service answers at the request's deadline) must end first, with time
	// to print its answer, whatever wait a host chose.
	if to := time.Duration(c.Approvals.HookTimeoutSeconds) * time.Second; to < Duration(c.Approvals.Wait.Max)+time.Minute {
		t.Errorf("approvals.hookTimeoutSeconds %d: want at least wait.max (%s) and a minute", c.Approvals.HookTimeoutSeconds, c.Approvals.Wait.Max)
	}
	for _, d := range []string{c.Approvals.ReattachGrace, c.Approvals.RetryEvery} {
		if v, err := time.ParseDuration(d); err != nil || v <= 0 {
			t.Errorf("approvals: %q is not a positive Go duration", d)
		}
	}
	for name, r := range map[string]IntRange{"maxBodySize": c.Webhooks.MaxBodySize, "concurrency": c.Webhooks.Concurrency} {
		if !(0 < r.Min && r.Min <= r.Default && r.Default <= r.Max) {
			t.Errorf("webhooks.%s: want 0 < min <= default <= max, got %+v", name, r)
		}
	}
	if s := c.Webhooks.QuotaSlack; s <= 0 || s%1024 != 0 {
		t.Errorf("webhooks.quotaSlack %d: want a positive number of KiB (the option text says it in KiB)", s)
	}
	if !strings.HasPrefix(c.Cookies.HandoverPath, AuthPage("")) {
		t.Errorf("cookies.handoverPath %q is not under routes.authPages %q", c.Cookies.HandoverPath, c.Routes.AuthPages.Path)
	}
}

// TestCookieNamesAreValid: the names are cookie names browsers accept,
// with their prefixes' rules.
func TestCookieNamesAreValid(t *testing.T) {
	k := c.Cookies
	if !strings.HasPrefix(k.Session, "__Host-") || !strings.HasPrefix(k.Bind, "__Host-") || !strings.HasPrefix(k.HandoverPath, "/") {
		t.Errorf("prefixes: %+v", k)
	}
	for _, name := range []string{k.Session, k.Bind} {
		ck := (&http.Cookie{Name: name, Value: "v"}).String()
		if !strings.HasPrefix(ck, name+"=") {
			t.Errorf("%q is not a valid cookie name (%q)", name, ck)
		}
	}
}

// TestExitCodesAreDistinctAndInOrder: the help text lists the codes in
// the order of the struct, so that order is 0, 1, 2, ...
func TestExitCodesAreDistinctAndInOrder(t *testing.T) {
	v := reflect.ValueOf(c.ExitCodes)
	for i := range v.NumField() {
		if e := v.Field(i).Interface().(ExitCode); e.Code != i {
			t.Errorf("exitCodes.%s is %d; want %d (the codes in order, none left out)", v.Type().Field(i).Name, e.Code, i)
		}
	}
}

// TestTemplatesFillInTheUser: For and Socket.For replace every
// placeholder; sockets of one user are distinct paths.
func TestTemplatesFillInTheUser(t *testing.T) {
	seen := map[string]string{}
	v := reflect.ValueOf(c.Sockets)
	for i := range v.NumField() {
		s := v.Field(i).Interface().(Socket)
		p := s.For("alice")
		if strings.Contains(p, Placeholder) || !strings.HasPrefix(p, "/run/") || !strings.HasSuffix(p, ".sock") {
			t.Errorf("sockets.%s: %q", v.Type().Field(i).Name, p)
		}
		if other, ok := seen[p]; ok {
			t.Errorf("sockets.%s and %s share %q", v.Type().Field(i).Name, other, p)
		}
		seen[p] = v.Type().Field(i).Name
		if (s.Mode == nil) == (s.DirMode == nil) {
			t.Errorf("sockets.%s: want exactly one of mode and dirMode", v.Type().Field(i).Name)
		}
	}
	if got := For(c.Routes.Hooks.Path, "bob"); got != "/bob/hook/*" {
		t.Errorf("routes.hooks for bob = %q", got)
	}
}

// TestAgentEventsMeanKnownStates: every agent event means one of the
// contract's states with one of its reasons, for a setup the contract
// has, and a key with a detail belongs to a setup that names its field.
func TestAgentEventsMeanKnownStates(t *testing.T) {
	terms := func(ts []Term) map[string]bool {
		m := map[string]bool{}
		for _, x := range ts {
			if m[x.Name] {
				t.Errorf("%q twice", x.Name)
			}
			m[x.Name] = true
		}
		return m
	}
	if Names.Session.Match(Attention.WatchSession) {
		t.Errorf("watchSession %q could be a registry session's name", Attention.WatchSession)
	}
	st := Attention.States
	states, reasons := terms([]Term{st.Working, st.NeedsYou, st.Finished, st.Exited, st.CrashLooping, st.Limited}), terms(Attention.Reasons)
	in := Attention.Inbox
	for _, s := range in.States {
		if !states[s] || s == st.Working.Name {
			t.Errorf("inbox.states: %q is not a state that needs a person", s)
		}
	}
	if ka, stale, resend := Duration(in.KeepAlive), Duration(in.StaleAfter), Duration(Attention.Report.ResendEvery); !(0 < ka && ka < time.Minute) || stale <= 2*resend {
		t.Errorf("inbox: want 0 < keepAlive < 1m (a revoked stream ends within a minute even without a wake-up) and staleAfter > 2 × report.resendEvery (one lost report lists nothing stale), got %+v", in)
	}
	if in.MaxStreams < 1 {
		t.Errorf("inbox.maxStreams: want at least 1, got %d", in.MaxStreams)
	}
	for setup, ae := range Attention.AgentEvents {
		if !slices.Contains(Conversations.Setups, setup) {
			t.Errorf("agentEvents.%s: not a setup", setup)
		}
		if len(ae.Events) == 0 {
			t.Errorf("agentEvents.%s: no events", setup)
		}
		for key, ev := range ae.Events {
			if !states[ev.State] || ev.Reason != "" && !reasons[ev.Reason] {
				t.Errorf("agentEvents.%s.%s = %+v: not a state and reason of the contract", setup, key, ev)
			}
			if name, _, ok := strings.Cut(key, ":"); ok && ae.DetailFields[name] == "" {
				t.Errorf("agentEvents.%s.%s has a detail, but detailFields has no field for %s", setup, key, name)
			}
		}
	}
}

// TestAppLabelSplitsBack: a label names exactly one (user, app), since app
// names hold no '-' (a user name may hold "--").
func TestAppLabelSplitsBack(t *testing.T) {
	for _, tc := range []struct{ user, app string }{{"alice", "records"}, {"a--b", "site"}, {"x-y", "a1"}} {
		l := AppLabel(tc.user, tc.app)
		u, a, ok := SplitAppLabel(l)
		if !ok || u != tc.user || a != tc.app {
			t.Errorf("SplitAppLabel(%q) = %q, %q, %v; want %q, %q", l, u, a, ok, tc.user, tc.app)
		}
	}
	for _, l := range []string{"records", "records-alice", "--alice"} {
		if u, a, ok := SplitAppLabel(l); ok && Names.App.Match(a) {
			t.Errorf("SplitAppLabel(%q) = %q, %q: a label with no app", l, u, a)
		}
	}
}
