// Package hooks is the webhook side of the per-user web daemon: configuration, secrets, the receiver and the durable store.
//
// It is the webhook side of the per-user web daemon
// (docs/web-contract.md, "Webhooks"): the hooks' configuration, their
// secrets (systemd credentials), the receiver that answers the hook
// listener (receiver.go: bounded readers, the signature, delivery slots)
// and the durable store of deliveries under
// ~/.local/state/agent-box/hooks/<name>/ (store.go). Waking a session for
// a delivery is the web daemon's (it owns the sessions): the receiver
// calls a function it is given once a delivery is stored.
package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/agent-box/agent-box/internal/runtime/badconfig"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/escape"
	"github.com/agent-box/agent-box/internal/runtime/registry"
)

// Environment of the web daemon for webhooks.
var (
	// EnvConfig names the hooks' configuration (a root-owned store file);
	// unset means the user has no hooks.
	EnvConfig = contract.Env.Hooks.Name
	// EnvDir is what every session's agent finds in its environment: the
	// directory holding one folder of deliveries per hook.
	EnvDir = contract.Env.HooksDir.Name
)

// Limits shared with the module (the contract; the module always writes
// every value).
var (
	// DefaultMaxBody (the option's default) is the least an unknown
	// hook reads, so that it costs what a known one does.
	DefaultMaxBody = contract.Webhooks.MaxBodySize.Default
	// MaxNotify bounds the text typed into a session.
	MaxNotify = contract.Webhooks.NotifyMaxBytes
	// retentionMin is the shortest retention.
	retentionMin = contract.Duration(contract.Webhooks.RetentionMin)
)

// Limits of the web daemon alone.
const (
	// MinSecret is the shortest secret accepted (bytes, after the one
	// trailing newline a secrets file usually ends with is removed).
	MinSecret = 16
	// MaxSecret bounds what is read from a credential.
	MaxSecret = 4096
	// MaxKeptHeaders, MaxHeaderName and MaxHeaderValue bound the headers
	// stored with a delivery; MaxDocOverhead bounds what a stored
	// document adds to 4/3 of its body (base64): those headers,
	// JSON-escaped, and the fixed fields.
	MaxKeptHeaders = 16
	MaxHeaderName  = 64
	MaxHeaderValue = 512
	MaxDocOverhead = 64 << 10
)

// MinQuota is the smallest quota that holds one delivery of maxBody
// bytes, whatever the body and headers (a document is at most 4/3 of its
// body plus MaxDocOverhead): twice the body and the contract's slack
// (64 KiB, which MaxDocOverhead must not exceed).
func MinQuota(maxBody int64) int64 { return 2*maxBody + contract.Webhooks.QuotaSlack }

// ValidName reports whether name is a hook's name: it is a path element
// of the URL, a directory and a credential name.
func ValidName(name string) bool { return contract.Names.Hook.Match(name) }

// Hook is one webhook of the user.
type Hook struct {
	Name      string        // the URL's last element and the folder of its deliveries
	Session   string        // the session it wakes
	Notify    string        // typed into the session after a delivery ("" types nothing)
	MaxBody   int64         // bytes; a longer body is refused with 413
	Quota     int64         // bytes of stored deliveries; beyond it 503
	Retention time.Duration // how long a delivery is kept (and its body deduplicated)
	Secret    []byte        // the HMAC-SHA256 key
}

// Config is every hook of the user and their shared limits.
type Config struct {
	Concurrency int // requests in flight on the hook listener; beyond it 503
	Hooks       map[string]*Hook
}

// fileConfig is the JSON the module renders (no secret in it).
type fileConfig struct {
	Concurrency int `json:"concurrency"`
	Hooks       map[string]struct {
		Session   string  `json:"session"`
		Notify    *string `json:"notify"`
		MaxBody   int64   `json:"maxBodySize"`
		Quota     int64   `json:"quota"`
		Retention string  `json:"retention"`
	} `json:"hooks"`
}

// CredentialName is the systemd credential holding hook name's secret.
func CredentialName(name string) string { return contract.Creds.HookPrefix + name }

// Load reads the configuration file path and each hook's secret from
// credDir ($CREDENTIALS_DIRECTORY). Every problem is an error naming the
// hook and what to fix: the daemon does not start with a hook it cannot
// verify. Every failure is a *badconfig.Error.
func Load(path, credDir string) (Config, error) {
	c, err := load(path, credDir)
	if err != nil {
		return Config{}, badconfig.Wrap("webhooks", err)
	}
	return c, nil
}

func load(path, credDir string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	var fc fileConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	c := Config{Concurrency: fc.Concurrency, Hooks: map[string]*Hook{}}
	if cr := contract.Webhooks.Concurrency; int64(c.Concurrency) < cr.Min || int64(c.Concurrency) > cr.Max {
		return Config{}, fmt.Errorf("%s: concurrency %d is not between %d and %d", path, c.Concurrency, cr.Min, cr.Max)
	}
	if len(fc.Hooks) > 0 && credDir == "" {
		return Config{}, fmt.Errorf("CREDENTIALS_DIRECTORY is unset: the unit passes each hook's secret as the credential %s", CredentialName("<name>"))
	}
	for name, fh := range fc.Hooks {
		where := fmt.Sprintf("hook %s", escape.Quote(name, 80))
		if !ValidName(name) {
			return Config{}, fmt.Errorf("%s: a name must match %s", where, contract.Names.Hook.Pattern)
		}
		if err := registry.CheckName(fh.Session); err != nil {
			return Config{}, fmt.Errorf("%s: session: %w", where, err)
		}
		h := &Hook{Name: name, Session: fh.Session, MaxBody: fh.MaxBody, Quota: fh.Quota}
		if fh.Notify != nil {
			h.Notify = *fh.Notify
		}
		if err := CheckNotify(h.Notify); err != nil {
			return Config{}, fmt.Errorf("%s: notify: %w", where, err)
		}
		if mb := contract.Webhooks.MaxBodySize; h.MaxBody < mb.Min || h.MaxBody > mb.Max {
			return Config{}, fmt.Errorf("%s: maxBodySize %d is not between %d and %d bytes", where, h.MaxBody, mb.Min, mb.Max)
		}
		if h.Quota < MinQuota(h.MaxBody) {
			return Config{}, fmt.Errorf("%s: quota %d is smaller than %d (twice maxBodySize %d, and %d bytes): a delivery of the largest size might not fit", where, h.Quota, MinQuota(h.MaxBody), h.MaxBody, contract.Webhooks.QuotaSlack)
		}
		if h.Retention, err = contract.ParseDuration(fh.Retention); err != nil || h.Retention < retentionMin {
			return Config{}, fmt.Errorf("%s: retention %s is not a Go duration of at least %s", where, escape.Quote(fh.Retention, 40), contract.Webhooks.RetentionMin)
		}
		if h.Secret, err = readSecret(filepath.Join(credDir, CredentialName(name))); err != nil {
			return Config{}, fmt.Errorf("%s: secret: %w", where, err)
		}
		c.Hooks[name] = h
	}
	return c, nil
}

// Names returns the hooks' names, sorted.
func (c Config) Names() []string {
	var n []string
	for k := range c.Hooks {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// MaxBody is the largest body any hook accepts (what an unknown hook reads,
// so that it costs what a known one does).
func (c Config) MaxBody() int64 {
	m := int64(DefaultMaxBody)
	for _, h := range c.Hooks {
		m = max(m, h.MaxBody)
	}
	return m
}

func readSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSecret+3))
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	switch {
	case len(b) > MaxSecret:
		return nil, fmt.Errorf("%s is longer than %d bytes", path, MaxSecret)
	case len(b) < MinSecret:
		return nil, fmt.Errorf("%s holds %d bytes; use at least %d (for example: openssl rand -hex 32)", path, len(b), MinSecret)
	}
	return b, nil
}

// CheckNotify accepts text that can be typed into a pane as is (tmux
// send-keys -l sends it to the program as input, never as keys): valid
// UTF-8 without an ASCII control character (a newline would submit
// early), at most MaxNotify bytes. The module's assertion checks the same
// ([[:cntrl:]] and the length).
func CheckNotify(s string) error {
	if len(s) > MaxNotify {
		return fmt.Errorf("%d bytes is more than %d", len(s), MaxNotify)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", escape.Quote(s, 80))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return fmt.Errorf("%s holds a control character", escape.Quote(s, 80))
		}
	}
	return nil
}
