package vmtest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTAP(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    *TAP
		wantErr string
	}{
		{
			name: "CRs are stripped and diagnostics attach to the test before them",
			in:   "boot noise\r\n1..2\r\nok 1 - first\r\n# took 3 ms\r\nnot ok 2 - second\r\n#   at sessions.sh:12\r\n# END\r\n",
			want: &TAP{Plan: 2, End: true, Notes: []string{"boot noise"}, Tests: []TAPTest{
				{Num: 1, OK: true, Desc: "first", Diags: []string{"# took 3 ms"}},
				{Num: 2, OK: false, Desc: "second", Diags: []string{"#   at sessions.sh:12"}},
			}},
		},
		{
			name:    "a missing plan is a failure",
			in:      "ok 1 - a\n# END\n",
			wantErr: "no plan line",
		},
		{
			name:    "a missing END is a failure even when every test passed",
			in:      "1..1\nok 1 - a\n",
			wantErr: "no final '# END'",
		},
		{
			name:    "fewer tests than planned is a failure",
			in:      "1..3\nok 1 - a\n# END\n",
			wantErr: "plan says 3 tests, report has 1",
		},
		{
			name:    "misnumbered tests are a failure",
			in:      "1..2\nok 1 - a\nok 3 - b\n# END\n",
			wantErr: "test 2 is numbered 3",
		},
		{
			name: "lines after END are ignored",
			in:   "1..0\n# END\nok 1 - late\n",
			want: &TAP{Plan: 0, End: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTAP(strings.NewReader(tt.in), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParseTAP (-want +got):\n%s", d)
			}
		})
	}
}
