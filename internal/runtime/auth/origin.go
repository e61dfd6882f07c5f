package auth

import (
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/contract"
)

// origin is an origin of the box other than the box origin: a user's
// (App == "") or one of a user's apps behind the login.
type origin struct{ User, App string }

// appKeyPrefix starts the session store's key of an app's origin: a user
// name never holds ':', so an app's child session is never a user's.
const appKeyPrefix = "app:"

// key is the origin's name in the session store: the user, or
// "app:<label>".
func (o origin) key() string {
	if o.App == "" {
		return o.User
	}
	return appKeyPrefix + contract.AppLabel(o.User, o.App)
}

// keyOrigin is key's inverse (ok is false for "" and anything else that
// names no origin's form).
func keyOrigin(key string) (origin, bool) {
	if label, ok := strings.CutPrefix(key, appKeyPrefix); ok {
		u, a, ok := contract.SplitAppLabel(label)
		return origin{User: u, App: a}, ok && webUserName.Match(u) && appName.Match(a)
	}
	return origin{User: key}, webUserName.Match(key)
}

var appName = &contract.Names.App

// host is the origin's host[:port].
func (c *Config) originHost(o origin) string {
	if o.App == "" {
		return o.User + "." + c.Domain
	}
	return contract.AppLabel(o.User, o.App) + "." + c.AppsDomain
}

// originURL is https:// and the origin's host.
func (c *Config) originURL(o origin) string { return "https://" + c.originHost(o) }

// originOf names the origin a request's Host (lowercased) is: a configured
// user's, or a configured app's behind the login.
func (c *Config) originOf(host string) (origin, bool) {
	if u, ok := strings.CutSuffix(host, "."+c.Domain); ok && c.isUser(u) {
		return origin{User: u}, true
	}
	if label, ok := strings.CutSuffix(host, "."+c.AppsDomain); ok {
		if u, a, ok := contract.SplitAppLabel(label); ok && c.isApp(u, a) {
			return origin{User: u, App: a}, true
		}
	}
	return origin{}, false
}

// isApp reports whether app is one of user's apps behind the login.
func (c *Config) isApp(user, app string) bool {
	for _, a := range c.Apps[user] {
		if a == app {
			return true
		}
	}
	return false
}

// mayOpenKey reports whether login may open the origin a session key
// names ("": the box origin, which every login has).
func (c *Config) mayOpenKey(login, key string) bool {
	if key == "" {
		return true
	}
	o, ok := keyOrigin(key)
	return ok && c.mayOpen(login, o.User) && (o.App == "" || c.isApp(o.User, o.App))
}
