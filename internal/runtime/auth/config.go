// Package auth is the auth service of the web surface (`agent-box auth serve`): logins, the box origin, forward_auth, the status and control sockets.
//
// It is the auth service of the web surface (`agent-box auth
// serve`, docs/web-contract.md "The auth service"): the pages of the box
// origin and /auth/* of every user origin, Caddy's forward_auth endpoint,
// the status socket the web daemons ask and the root-only control socket.
// Sessions are kept in $STATE_DIRECTORY/sessions.json with only
// sha256(secret) at rest. It also holds what `agent-box web revoke` needs.
// Its other jobs are packages of their own: the password hashes (pwhash),
// the login limits and hash queue (loginlimit), the attention board and
// the inbox streams it wakes (board), the notify feed (notify.Feed).
package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-box/agent-box/internal/runtime/badconfig"
	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/pwhash"
	"github.com/agent-box/agent-box/internal/runtime/userfile"
)

// Default lifetimes (the contract; docs/web-contract.md, "Sessions and
// cookies").
var (
	DefaultSessionLifetime = contract.Duration(contract.Web.SessionLifetime.Default)
	DefaultIdleTimeout     = contract.Duration(contract.Web.IdleTimeout.Default)
)

const (
	configLimit     = 1 << 20 // the configuration file, from the store
	credentialLimit = 1024    // one hash line
)

// The names (the contract): a configured login must match the login
// pattern, which is also the failed-login line's rule for <L>, so its
// failures are always logged by name; a user is an agent user name that
// is also a DNS label, since it names the origin U.D.
var (
	loginName   = &contract.Names.Login
	webUserName = &contract.Names.WebUser
)

// Config is the auth service's configuration (AGENT_BOX_AUTH_CONFIG) with
// the login hashes read from the credentials directory.
type Config struct {
	Domain          string              // D: host[:port], exactly as browsers use it
	AppsDomain      string              // the apps' domain (host[:port]): D unless set
	Users           []string            // agent users with the web surface
	Apps            map[string][]string // user -> its apps behind the login
	Logins          map[string]Login    // login name -> what it may open
	SessionLifetime time.Duration       // absolute
	IdleTimeout     time.Duration
	// ApprovalWait: how long a permission request waits for a decision;
	// ActionLifetime: how long a notification's action URL decides.
	ApprovalWait, ActionLifetime time.Duration

	hashes map[string]pwhash.Hash // login -> its password hash
}

// Login is one person: the agent users it may open, and whether its
// notifications go out (the notify service holds its URL).
type Login struct {
	Users  []string `json:"users"`
	Notify bool     `json:"notify,omitempty"`
	// Actions: its notifications carry the action URLs of permission
	// requests (with Notify only).
	Actions bool `json:"actions,omitempty"`
}

// configWhat names this configuration in a *badconfig.Error (exit 12).
const configWhat = "auth configuration"

func configErrorf(path, format string, a ...any) error {
	return badconfig.Errorf(configWhat, path, format, a...)
}

// rawConfig is the JSON of the contract; unknown fields are refused.
type rawConfig struct {
	Domain          string              `json:"domain"`
	AppsDomain      *string             `json:"appsDomain"`
	Users           []string            `json:"users"`
	Apps            map[string][]string `json:"apps"`
	Logins          map[string]Login    `json:"logins"`
	SessionLifetime *string             `json:"sessionLifetime"`
	IdleTimeout     *string             `json:"idleTimeout"`
	ApprovalWait    *string             `json:"approvalWait"`
	ActionLifetime  *string             `json:"actionLifetime"`
}

// LoadConfig reads the configuration file at path and each login's hash
// from credDir/login-<L>. Every failure is a *badconfig.Error.
func LoadConfig(path, credDir string) (*Config, error) {
	if path == "" {
		return nil, &badconfig.Error{What: configWhat, Err: errors.New(contract.Env.AuthConfig.Name + " is unset")}
	}
	data, err := userfile.Read(path, configLimit)
	if err != nil {
		return nil, &badconfig.Error{What: configWhat, Path: path, Err: err}
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, &badconfig.Error{What: configWhat, Path: path, Err: err}
	}
	if err := c.loadHashes(credDir); err != nil {
		return nil, err
	}
	return c, nil
}

// ParseConfig parses and checks the configuration JSON (without hashes).
func ParseConfig(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var raw rawConfig
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the object")
	}
	if err := exactKeys(data); err != nil {
		return nil, err
	}
	c := &Config{Domain: raw.Domain, AppsDomain: raw.Domain, Users: raw.Users, Logins: raw.Logins, Apps: raw.Apps}
	if err := checkDomain(c.Domain); err != nil {
		return nil, err
	}
	if raw.AppsDomain != nil {
		if err := checkDomain(*raw.AppsDomain); err != nil {
			return nil, fmt.Errorf("appsDomain: %w", err)
		}
		c.AppsDomain = *raw.AppsDomain
	}
	seen := map[string]bool{}
	for _, u := range c.Users {
		if !webUserName.Match(u) {
			return nil, fmt.Errorf("users: %q is not a user name that is also a host name label (%s)", u, webUserName.Pattern)
		}
		if seen[u] {
			return nil, fmt.Errorf("users: %q is listed twice", u)
		}
		seen[u] = true
	}
	if err := c.checkApps(seen); err != nil {
		return nil, err
	}
	if c.Logins == nil {
		c.Logins = map[string]Login{}
	}
	for name, l := range c.Logins {
		if !loginName.Match(name) {
			return nil, fmt.Errorf("logins: %q is not a login name (%s)", name, loginName.Pattern)
		}
		mine := map[string]bool{}
		for _, u := range l.Users {
			if !seen[u] {
				return nil, fmt.Errorf("logins.%s.users: unknown user %q (not in users)", name, u)
			}
			if mine[u] {
				return nil, fmt.Errorf("logins.%s.users: %q is listed twice", name, u)
			}
			mine[u] = true
		}
	}
	var err error
	if c.SessionLifetime, err = duration("sessionLifetime", raw.SessionLifetime, contract.Web.SessionLifetime); err != nil {
		return nil, err
	}
	if c.IdleTimeout, err = duration("idleTimeout", raw.IdleTimeout, contract.Web.IdleTimeout); err != nil {
		return nil, err
	}
	if c.ApprovalWait, err = interval("approvalWait", raw.ApprovalWait, contract.Approvals.Wait); err != nil {
		return nil, err
	}
	if c.ActionLifetime, err = interval("actionLifetime", raw.ActionLifetime, contract.Approvals.ActionLifetime); err != nil {
		return nil, err
	}
	for name, l := range c.Logins {
		if l.Actions && !l.Notify {
			return nil, fmt.Errorf("logins.%s: actions without notify", name)
		}
	}
	return c, nil
}

// checkApps checks the apps behind the login: apps of configured users,
// app names of the contract, each once, and no app origin that is also a
// user's (a user named like an app's label, when the apps' domain is D).
func (c *Config) checkApps(users map[string]bool) error {
	for u, apps := range c.Apps {
		if !users[u] {
			return fmt.Errorf("apps: unknown user %q (not in users)", u)
		}
		mine := map[string]bool{}
		for _, a := range apps {
			if !appName.Match(a) {
				return fmt.Errorf("apps.%s: %q is not an app name (%s)", u, a, appName.Pattern)
			}
			if mine[a] {
				return fmt.Errorf("apps.%s: %q is listed twice", u, a)
			}
			mine[a] = true
			if l := contract.AppLabel(u, a); c.AppsDomain == c.Domain && users[l] {
				return fmt.Errorf("apps.%s: the origin of app %q, %s.%s, is user %q's; set appsDomain or rename one", u, a, l, c.Domain, l)
			}
		}
	}
	return nil
}

// exactKeys refuses keys that encoding/json matched only case-insensitively
// ("sessionlifetime"): the names are exactly the contract's.
func exactKeys(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	known := map[string]bool{"domain": true, "appsDomain": true, "users": true, "apps": true, "logins": true, "sessionLifetime": true, "idleTimeout": true, "approvalWait": true, "actionLifetime": true}
	for k := range top {
		if !known[k] {
			return fmt.Errorf("unknown field %q", k)
		}
	}
	var logins map[string]map[string]json.RawMessage
	if l, ok := top["logins"]; ok && json.Unmarshal(l, &logins) == nil {
		for name, fields := range logins {
			for k := range fields {
				if k != "users" && k != "notify" && k != "actions" {
					return fmt.Errorf("logins.%s: unknown field %q", name, k)
				}
			}
		}
	}
	return nil
}

// duration parses a lifetime setting (the contract's format, at least its
// least value); absent, it is the default.
func duration(field string, s *string, l contract.Lifetime) (time.Duration, error) {
	if s == nil {
		return contract.Duration(l.Default), nil
	}
	d, err := contract.ParseDuration(*s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	if d < contract.Duration(l.Min) {
		return 0, fmt.Errorf("%s: %q is shorter than %s", field, *s, l.Min)
	}
	return d, nil
}

// interval parses a bounded duration setting; absent, it is the default.
func interval(field string, s *string, iv contract.Interval) (time.Duration, error) {
	d, err := duration(field, s, contract.Lifetime{Default: iv.Default, Min: iv.Min})
	if err == nil && d > contract.Duration(iv.Max) {
		err = fmt.Errorf("%s: %q is longer than %s", field, *s, iv.Max)
	}
	return d, err
}

// checkDomain accepts a lowercase DNS name with an optional port: what a
// browser puts in Host (no scheme, path, user info, trailing dot or IP).
var checkDomain = contract.CheckDomain

// loadHashes reads credDir/login-<L> for each login.
func (c *Config) loadHashes(credDir string) error {
	c.hashes = map[string]pwhash.Hash{}
	if len(c.Logins) == 0 {
		return nil
	}
	if credDir == "" {
		return &badconfig.Error{What: configWhat, Err: errors.New("CREDENTIALS_DIRECTORY is unset: no login hash can be read (LoadCredential=" + contract.Creds.LoginPrefix + "<L>:...)")}
	}
	for name := range c.Logins {
		p := filepath.Join(credDir, contract.Creds.LoginPrefix+name)
		data, err := userfile.Read(p, credentialLimit)
		if err != nil {
			return &badconfig.Error{What: configWhat, Path: p, Err: fmt.Errorf("the hash of login %q: %w", name, err)}
		}
		h, err := pwhash.ParseHash(strings.TrimRight(string(data), " \t\r\n"))
		if err != nil {
			return &badconfig.Error{What: configWhat, Path: p, Err: fmt.Errorf("the hash of login %q: %w", name, err)}
		}
		c.hashes[name] = h
	}
	return nil
}

// mayOpen reports whether login may open user.
func (c *Config) mayOpen(login, user string) bool {
	l, ok := c.Logins[login]
	if !ok {
		return false
	}
	for _, u := range l.Users {
		if u == user {
			return true
		}
	}
	return false
}

// isUser reports whether u is a configured user.
func (c *Config) isUser(u string) bool {
	for _, x := range c.Users {
		if x == u {
			return true
		}
	}
	return false
}
