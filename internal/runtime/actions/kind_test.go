package actions

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agent-box/agent-box/internal/runtime/agents"
	"github.com/agent-box/agent-box/internal/runtime/envfile"
	"github.com/agent-box/agent-box/internal/runtime/registry"
	"github.com/agent-box/agent-box/internal/runtime/state"
)

// TestEveryErrorHasOneKind: the errors both front ends meet, wrapped as
// the packages return them, fall in the kinds the CLI and the page map.
func TestEveryErrorHasOneKind(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("session add: %w", err) }
	for _, tc := range []struct {
		err  error
		want Kind
	}{
		{inputf("--cwd needs a directory"), Input},
		{wrap(registry.ErrUnknown), Unknown},
		{wrap(envfile.ErrUnknownKey), Unknown},
		{wrap(registry.ErrDuplicate), Duplicate},
		{wrap(registry.ErrInvalidName), InvalidName},
		{wrap(registry.ErrTooLarge), InvalidName},
		{wrap(envfile.ErrInvalidKey), InvalidName},
		{wrap(envfile.ErrInvalidValue), InvalidName},
		{wrap(agents.ErrUnknownAgent), UnknownAgent},
		{wrap(&registry.CorruptError{}), Corrupt},
		{wrap(&envfile.CorruptError{}), Corrupt},
		{wrap(&state.CorruptError{}), Corrupt},
		{wrap(state.ErrNotRunning), NotRunning},
		{errors.New("lock: timed out"), Unavailable},
	} {
		if got := KindOf(tc.err); got != tc.want {
			t.Errorf("KindOf(%v) = %d; want %d", tc.err, got, tc.want)
		}
	}
}
