package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goodSecret = "0123456789abcdef0123456789abcdef\n"

func writeConfig(t *testing.T, json string, secrets map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	creds := filepath.Join(dir, "creds")
	os.Mkdir(creds, 0o700)
	for k, v := range secrets {
		if err := os.WriteFile(filepath.Join(creds, k), []byte(v), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(p, []byte(json), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, creds
}

const oneHook = `{"concurrency":8,"hooks":{"gh":{"session":"main","notify":"New event: {file}","maxBodySize":1048576,"quota":67108864,"retention":"168h"}}}`

func TestLoadReadsEveryHookAndItsSecretWithoutTheTrailingNewline(t *testing.T) {
	p, creds := writeConfig(t, oneHook, map[string]string{"hook-gh": goodSecret})
	c, err := Load(p, creds)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Hooks["gh"]
	if c.Concurrency != 8 || h == nil || h.Session != "main" || h.Notify != "New event: {file}" ||
		h.MaxBody != 1<<20 || h.Quota != 64<<20 || h.Retention != 168*time.Hour ||
		string(h.Secret) != strings.TrimSuffix(goodSecret, "\n") {
		t.Fatalf("loaded %+v, hook %+v", c, h)
	}
}

func TestLoadRefusesAConfigurationItCannotServeSafely(t *testing.T) {
	hook := func(edit string) string {
		return strings.Replace(oneHook, `"session":"main"`, edit, 1)
	}
	for _, tc := range []struct {
		name, json string
		secrets    map[string]string
		credDir    string // "" uses the written one; "-" none
		want       string
	}{
		{"missing secret", oneHook, nil, "", "hook-gh: no such file"},
		{"short secret", oneHook, map[string]string{"hook-gh": "short\n"}, "", "use at least 16"},
		{"no credentials directory", oneHook, nil, "-", "CREDENTIALS_DIRECTORY is unset"},
		{"bad name", strings.Replace(oneHook, `"gh"`, `"../x"`, 1), nil, "", "a name must match"},
		{"bad session", hook(`"session":"a b"`), map[string]string{"hook-gh": goodSecret}, "", "session:"},
		{"notify with a newline", strings.Replace(oneHook, `New event: {file}`, `line\nnext`, 1), map[string]string{"hook-gh": goodSecret}, "", "control character"},
		{"quota below the body cap", strings.Replace(oneHook, `"quota":67108864`, `"quota":10`, 1), map[string]string{"hook-gh": goodSecret}, "", "quota 10 is smaller"},
		{"bad retention", strings.Replace(oneHook, `"168h"`, `"7d"`, 1), map[string]string{"hook-gh": goodSecret}, "", "retention"},
		{"zero concurrency", strings.Replace(oneHook, `"concurrency":8`, `"concurrency":0`, 1), nil, "", "concurrency 0"},
		{"unknown field", strings.Replace(oneHook, `"notify"`, `"notfy"`, 1), nil, "", "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, creds := writeConfig(t, tc.json, tc.secrets)
			switch tc.credDir {
			case "-":
				creds = ""
			case "":
			}
			_, err := Load(p, creds)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckNotifyKeepsBackslashesAndRefusesASCIIControls(t *testing.T) {
	for s, ok := range map[string]bool{
		`path C:\x {id}`: true, "héllo": true, "a\tb": false, "a\x1b[31m": false, "a\x7f": false, "\xff": false,
		"\u202e and \u0085 are input, not keys": true,
		strings.Repeat("x", MaxNotify):          true, strings.Repeat("x", MaxNotify+1): false,
	} {
		if err := CheckNotify(s); (err == nil) != ok {
			t.Errorf("CheckNotify(%q) = %v, want ok=%v", s, err, ok)
		}
	}
}

// TestTheQuotaSlackHoldsADocumentsOverhead: MinQuota (twice the body and
// the contract's slack) holds one delivery only if a stored document adds
// at most the slack to its body.
func TestTheQuotaSlackHoldsADocumentsOverhead(t *testing.T) {
	if MinQuota(0) < MaxDocOverhead {
		t.Errorf("MinQuota(0) = %d is less than MaxDocOverhead %d", MinQuota(0), MaxDocOverhead)
	}
}
