package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDiskRefusesWhatItCannotSetBeforeTouchingAQuota: a size the option
// would refuse, an unknown user and a stray word each get their exit code
// and say why (setting a real quota needs a filesystem that keeps them:
// the VM tier's limits phase).
func TestDiskRefusesWhatItCannotSetBeforeTouchingAQuota(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"disk", "set", "root", "20GB"}, exitUsage, "disk quota 20GB: not a size such as 20G"},
		{[]string{"disk", "set", "root", "0M"}, exitUsage, "not a size such as 20G"},
		{[]string{"disk", "set", "no-such-user-here", "1G"}, exitFailure, "disk: user: unknown user no-such-user-here"},
		{[]string{"disk", "clear", "no-such-user-here"}, exitFailure, "disk: user: unknown user no-such-user-here"},
		{[]string{"disk", "set", "root"}, exitUsage, "usage: disk | disk set USER SIZE | disk clear USER"},
		{[]string{"disk", "show"}, exitUsage, "usage: disk"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			p := &Program{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")}
			if code := p.Main(context.Background(), tc.args); code != tc.code || !strings.Contains(errb.String(), tc.says) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, errb.String(), tc.code, tc.says)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
}
