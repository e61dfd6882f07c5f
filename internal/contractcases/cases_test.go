// Package contractcases runs the contract's shared case table through the module's assertions and the runtime's loaders.
//
// It runs the contract's shared case table
// (tests/lib/contract-cases.json) through both sides that check the same
// values: the module's assertions (through the offline evaluation of the
// lib as embedded in the generated module, tests/lib/contract-cases.nix)
// and the runtime's configuration loaders (the auth service's, the web
// daemon's, the webhooks', the seed's, the disk quota's, the supervisor's
// usage limits). Each case must be accepted by both or refused
// by both, as the table says; a refusal's message must name the value.
package contractcases

import (
	"encoding/json"
	"fmt"
	"github.com/agent-box/agent-box/internal/runtime/attention"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-box/agent-box/internal/module"
	"github.com/agent-box/agent-box/internal/nixtest"
	"github.com/agent-box/agent-box/internal/runtime/auth"
	"github.com/agent-box/agent-box/internal/runtime/cli"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/diskquota"
	"github.com/agent-box/agent-box/internal/runtime/hooks"
	"github.com/agent-box/agent-box/internal/runtime/paths"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/supervisor"
	"github.com/agent-box/agent-box/internal/runtime/web"
)

type tcase struct {
	Value    json.RawMessage `json:"value"`
	Accepted bool            `json:"accepted"`
}

func (c tcase) str(t *testing.T) string {
	var s string
	if err := json.Unmarshal(c.Value, &s); err != nil {
		t.Fatalf("value %s: want a string: %v", c.Value, err)
	}
	return s
}

func (c tcase) int(t *testing.T) int64 {
	var n int64
	if err := json.Unmarshal(c.Value, &n); err != nil {
		t.Fatalf("value %s: want an integer: %v", c.Value, err)
	}
	return n
}

// goSide checks one case with the runtime and returns its error (nil:
// accepted) and the text its message must name.
type goSide func(t *testing.T, c tcase) (err error, names string)

func authConfig(t *testing.T, cfg map[string]any) error {
	base := map[string]any{
		"domain": "box.example.com",
		"users":  []string{"alice"},
		"logins": map[string]any{"ops": map[string]any{"users": []string{"alice"}}},
	}
	for k, v := range cfg {
		base[k] = v
	}
	data, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	_, err = auth.ParseConfig(data)
	return err
}

// hookConfig loads alice's hooks: gh (overridden by h) or, with name set,
// one hook of that name; concurrency 8 unless given.
func hookConfig(t *testing.T, name string, h map[string]any, concurrency int64) error {
	dir := t.TempDir()
	hook := map[string]any{"session": "main", "maxBodySize": 1 << 20, "quota": 64 << 20, "retention": "168h"}
	for k, v := range h {
		hook[k] = v
	}
	if name == "" {
		name = "gh"
	}
	data, err := json.Marshal(map[string]any{"concurrency": concurrency, "hooks": map[string]any{name: hook}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, hooks.CredentialName(name)), []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = hooks.Load(cfg, dir)
	return err
}

// seed loads a seed file of these sessions, as the supervisor does.
func seed(t *testing.T, sessions []map[string]any) error {
	data, err := json.Marshal(map[string]any{"sessions": sessions})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = registry.LoadSeed(path)
	return err
}

// webDaemon builds the web daemon's configuration with env added.
func webDaemon(env map[string]string) error {
	all := map[string]string{web.EnvDomain: "box.example.com", web.EnvTTYD: "/run/current-system/sw/bin/ttyd"}
	for k, v := range env {
		all[k] = v
	}
	_, err := web.FromEnv(func(k string) string { return all[k] }, paths.Env{Home: "/home/alice"})
	return err
}

var goSides = map[string]goSide{
	"login": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return authConfig(t, map[string]any{"logins": map[string]any{v: map[string]any{"users": []string{"alice"}}}}), v
	},
	"webUser": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return authConfig(t, map[string]any{"users": []string{v}, "logins": map[string]any{"ops": map[string]any{"users": []string{v}}}}), v
	},
	"app": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return authConfig(t, map[string]any{"apps": map[string]any{"alice": []string{v}}}), v
	},
	"session": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return hookConfig(t, "", map[string]any{"session": v}, 8), v
	},
	"hook": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return hookConfig(t, v, nil, 8), v
	},
	"notify": func(t *testing.T, c tcase) (error, string) {
		return hookConfig(t, "", map[string]any{"notify": c.str(t)}, 8), "notify"
	},
	"notifyLength": func(t *testing.T, c tcase) (error, string) {
		n := c.int(t)
		return hookConfig(t, "", map[string]any{"notify": strings.Repeat("x", int(n))}, 8), "notify"
	},
	"maxBodySize": func(t *testing.T, c tcase) (error, string) {
		n := c.int(t)
		return hookConfig(t, "", map[string]any{"maxBodySize": n, "quota": 2*n + contract.Webhooks.QuotaSlack}, 8), strconv.FormatInt(n, 10)
	},
	"quota": func(t *testing.T, c tcase) (error, string) {
		var v struct{ MaxBodySize, Quota int64 }
		if err := json.Unmarshal(c.Value, &v); err != nil {
			t.Fatal(err)
		}
		return hookConfig(t, "", map[string]any{"maxBodySize": v.MaxBodySize, "quota": v.Quota}, 8), strconv.FormatInt(v.Quota, 10)
	},
	"retention": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return hookConfig(t, "", map[string]any{"retention": v}, 8), v
	},
	"concurrency": func(t *testing.T, c tcase) (error, string) {
		n := c.int(t)
		return hookConfig(t, "", nil, n), strconv.FormatInt(n, 10)
	},
	"sessionLifetime": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return authConfig(t, map[string]any{"sessionLifetime": v}), v
	},
	"idleTimeout": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return authConfig(t, map[string]any{"idleTimeout": v}), v
	},
	"approvalWait": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return authConfig(t, map[string]any{"approvalWait": v}), v
	},
	"actionLifetime": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return authConfig(t, map[string]any{"actionLifetime": v}), v
	},
	"terminalCheckInterval": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		return webDaemon(map[string]string{web.EnvCheckInterval: v}), v
	},
	"restartDelay": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		_, err := cli.ParseBackoff(v, "1h")
		return err, v
	},
	"silenceAfter": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		_, err := attention.SilenceAfter(v)
		return err, v
	},
	// A user's disk quota: its unit's program reads the size.
	"diskQuota": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		_, err := diskquota.ParseSize(v)
		return err, v
	},
	// The usage limits' schedule: the supervisor reads it from its
	// unit's environment; a refusal names the wait that is wrong (the
	// first, unless only the longest is).
	"usageLimitWaits": func(t *testing.T, c tcase) (error, string) {
		var w struct{ FirstWait, MaxWait string }
		if err := json.Unmarshal(c.Value, &w); err != nil {
			t.Fatal(err)
		}
		_, err := supervisor.LimitsFromEnv(envOf(map[string]string{contract.Env.LimitFirstWait.Name: w.FirstWait, contract.Env.LimitMaxWait.Name: w.MaxWait}))
		if d, perr := contract.ParseDuration(w.FirstWait); perr != nil || d <= 0 {
			return err, w.FirstWait
		}
		return err, w.MaxWait
	},
	"usageLimitGrowth": func(t *testing.T, c tcase) (error, string) {
		n := strconv.FormatInt(c.int(t), 10)
		_, err := supervisor.LimitsFromEnv(envOf(map[string]string{contract.Env.LimitGrowth.Name: n}))
		return err, n
	},
	// The session limits: the seed's loader, which checks every entry as
	// the registry does.
	"sessionArgs": func(t *testing.T, c tcase) (error, string) {
		var lens []int
		if err := json.Unmarshal(c.Value, &lens); err != nil {
			t.Fatal(err)
		}
		args := make([]string, len(lens))
		for i, n := range lens {
			args[i] = strings.Repeat("a", n)
		}
		names := strconv.Itoa(registry.ArgsSize(args))
		for _, a := range args {
			if len(a) > contract.Sessions.ArgMaxBytes {
				names = strconv.Itoa(len(a))
				break
			}
		}
		return seed(t, []map[string]any{{"name": "main", "agent": "shell", "args": args}}), names
	},
	"sessionCwd": func(t *testing.T, c tcase) (error, string) {
		n := c.int(t)
		return seed(t, []map[string]any{{"name": "main", "agent": "shell", "cwd": "/" + strings.Repeat("a", int(n)-1)}}), strconv.FormatInt(n, 10)
	},
	"sessionCount": func(t *testing.T, c tcase) (error, string) {
		n := c.int(t)
		entries := make([]map[string]any, n)
		for i := range entries {
			entries[i] = map[string]any{"name": fmt.Sprintf("s%d", i), "agent": "shell"}
		}
		return seed(t, entries), strconv.FormatInt(n, 10)
	},
	// The domain is read by two loaders: both must agree with the table.
	"domain": func(t *testing.T, c tcase) (error, string) {
		v := c.str(t)
		a, w := authConfig(t, map[string]any{"domain": v}), webDaemon(map[string]string{web.EnvDomain: v})
		if (a == nil) != (w == nil) {
			t.Errorf("domain %q: the auth service says %v, the web daemon %v", v, a, w)
		}
		if a == nil {
			return w, v
		}
		return a, v
	},
}

// TestBothSidesAcceptExactlyTheTablesValues runs every case of the table
// through the module's checks and the runtime's loaders.
func TestBothSidesAcceptExactlyTheTablesValues(t *testing.T) {
	tableFile := filepath.Join(module.Root(), "tests", "lib", "contract-cases.json")
	data, err := os.ReadFile(tableFile)
	if err != nil {
		t.Fatal(err)
	}
	var table map[string][]tcase
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatalf("%s: %v", tableFile, err)
	}
	for rule := range goSides {
		if len(table[rule]) == 0 {
			t.Errorf("the table has no cases for %s", rule)
		}
	}

	offline := module.Assemble(t).Offline(t)
	file := filepath.Join(t.TempDir(), "run.nix")
	expr := fmt.Sprintf("import %q { offline = import %q; }\n", filepath.Join(module.Root(), "tests", "lib", "contract-cases.nix"), offline)
	if err := os.WriteFile(file, []byte(expr), 0o644); err != nil {
		t.Fatal(err)
	}
	var nix map[string][][]string
	if err := nixtest.EvalJSON(t, file, &nix); err != nil {
		t.Fatal(err)
	}

	for rule, cases := range table {
		check, ok := goSides[rule]
		if !ok {
			t.Errorf("rule %s: no runtime loader checks it here", rule)
			continue
		}
		if len(nix[rule]) != len(cases) {
			t.Errorf("rule %s: the Nix side answered %d of %d cases", rule, len(nix[rule]), len(cases))
			continue
		}
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", rule, c.Value), func(t *testing.T) {
				msgs := nix[rule][i]
				goErr, names := check(t, c)
				switch {
				case c.Accepted && len(msgs) > 0:
					t.Errorf("Nix refuses it: %q", msgs)
				case !c.Accepted && len(msgs) == 0:
					t.Errorf("Nix accepts it")
				case !c.Accepted && !anyContains(msgs, names):
					t.Errorf("no Nix message names %q: %q", names, msgs)
				}
				switch {
				case c.Accepted && goErr != nil:
					t.Errorf("the runtime refuses it: %v", goErr)
				case !c.Accepted && goErr == nil:
					t.Errorf("the runtime accepts it")
				case !c.Accepted && !strings.Contains(goErr.Error(), head(names)):
					t.Errorf("the runtime's message does not name %q: %v", names, goErr)
				}
			})
		}
	}
}

// envOf is a getenv of m.
func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func anyContains(msgs []string, s string) bool {
	for _, m := range msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// head is the start of a value that every message shows, even one that
// shortens long values (escape.Quote keeps at least 40 bytes).
func head(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}
