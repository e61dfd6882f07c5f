package badconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestTheMessageNamesTheConfigurationAndItsFile(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{Errorf("web serve", "", "%s is unset", "AGENT_BOX_WEB_DOMAIN"), "web serve: AGENT_BOX_WEB_DOMAIN is unset"},
		{Errorf("auth configuration", "/etc/a.json", "invalid JSON"), `auth configuration "/etc/a.json": invalid JSON`},
		{Wrap("web serve", Errorf("webhooks", "", "hook %q: no secret", "gh")), `web serve: webhooks: hook "gh": no secret`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestIsSeesAnErrorThroughWrapping(t *testing.T) {
	inner := Errorf("webhooks", "/x.json", "read: %w", fs.ErrNotExist)
	outer := fmt.Errorf("starting: %w", inner)
	if !Is(outer) || !errors.Is(outer, fs.ErrNotExist) {
		t.Errorf("Is(%v) = %v, errors.Is ErrNotExist = %v", outer, Is(outer), errors.Is(outer, fs.ErrNotExist))
	}
	if Is(errors.New("web serve: not a configuration error")) || Is(nil) {
		t.Error("Is took a plain error (or nil) for a configuration error")
	}
	if Wrap("x", nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
}
