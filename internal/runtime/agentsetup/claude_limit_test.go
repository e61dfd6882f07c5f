package agentsetup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClaudesLimitResetIsReadFromTheEndOfItsTranscript: the reset comes
// from the transcript the StopFailure input names, however long it is;
// an input without a transcript, or one that is not a file, says why.
func TestClaudesLimitResetIsReadFromTheEndOfItsTranscript(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.jsonl")
	filler := strings.Repeat(`{"type":"user","message":{"content":"`+strings.Repeat("x", 1000)+`"}}`+"\n", 600) // 600 KB before it
	limit := `{"type":"assistant","apiError":"usage_limit_reached","apiErrorParams":{"rate_limit_info":{"status":"rejected","resetsAt":1796467187,"rateLimitType":"five_hour"}},"error":"rate_limit"}` + "\n"
	if err := os.WriteFile(tr, []byte(filler+limit+`{"type":"system","subtype":"informational"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, ok := For("claude").(LimitReporter)
	if !ok {
		t.Fatal("the claude setup reads no limit reset")
	}
	got, err := r.LimitReset([]byte(`{"hook_event_name":"StopFailure","error":"rate_limit","transcript_path":"`+tr+`"}`), time.Now())
	if err != nil || !got.Equal(time.Unix(1796467187, 0)) {
		t.Fatalf("LimitReset = %s, %v; want the record's resetsAt", got, err)
	}
	for input, says := range map[string]string{
		`{"error":"rate_limit"}`:                          "names no transcript",
		`{"transcript_path":"relative.jsonl"}`:            "names no transcript",
		`{"transcript_path":"` + dir + `"}`:               "not a regular file",
		`{"transcript_path":"` + dir + `/missing.jsonl"}`: "no such file",
	} {
		if got, err := r.LimitReset([]byte(input), time.Now()); err == nil || !got.IsZero() || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %s, %v; want an error saying %q", input, got, err, says)
		}
	}
	if _, ok := For("codex").(LimitReporter); ok {
		t.Error("codex reads a limit reset: Codex 0.171.0 reports no failed turn to any hook")
	}
}
