package scriptedmodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("X-Api-Key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// events reads a server-sent event stream into (event, data) pairs.
func events(t *testing.T, r io.Reader) (names []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			names = append(names, strings.TrimPrefix(line, "event: "))
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatalf("data is not JSON: %v: %s", err, line)
			}
			data = append(data, m)
		}
	}
	return names, data
}

func TestARunLineIsAnsweredWithOneBashToolCallStreamed(t *testing.T) {
	var log bytes.Buffer
	srv := httptest.NewServer(&Server{Log: &log})
	defer srv.Close()
	resp := post(t, srv.URL+"/v1/messages?beta=true", `{"model":"m","stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"please\nrun: echo hi > /tmp/f"}]}]}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	names, data := events(t, resp.Body)
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", names, want)
	}
	block := data[1]["content_block"].(map[string]any)
	delta := data[2]["delta"].(map[string]any)
	if block["type"] != "tool_use" || block["name"] != "Bash" || delta["partial_json"] != `{"command":"echo hi \u003e /tmp/f","description":"scripted command"}` {
		t.Errorf("tool call %v %v", block, delta)
	}
	if data[4]["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Errorf("stop reason %v", data[4])
	}
	var rec Record
	if err := json.Unmarshal(log.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Last != "please\nrun: echo hi > /tmp/f" || rec.Tool != "echo hi > /tmp/f" || rec.Auth != "x-api-key" || rec.Path != "/v1/messages" || rec.Tools != 1 {
		t.Errorf("record %+v", rec)
	}
}

func TestToolResultsAndTextGetTextReplies(t *testing.T) {
	srv := httptest.NewServer(&Server{})
	defer srv.Close()
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}]}`: "tool done",
		`{"messages":[{"role":"user","content":"hello there\nsecond line"}]}`:                                "reply 2: hello there",
		`{"messages":[{"role":"user","content":"run: rm -rf /tmp/x"}]}`:                                      "reply 3: run: rm -rf /tmp/x",
	} {
		resp := post(t, srv.URL+"/v1/messages", body)
		var m messageDoc
		json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if len(m.Content) != 1 || m.Content[0].Text == nil || !strings.HasPrefix(*m.Content[0].Text, strings.Split(want, " ")[0]) {
			t.Errorf("%s: reply %+v, want %q", body, m, want)
		}
	}
}

func TestCountTokensAndUnknownPaths(t *testing.T) {
	srv := httptest.NewServer(&Server{})
	defer srv.Close()
	if resp := post(t, srv.URL+"/v1/messages/count_tokens", `{}`); resp.StatusCode != 200 {
		t.Errorf("count_tokens: %d", resp.StatusCode)
	}
	if resp := post(t, srv.URL+"/v1/other", `{}`); resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}

// TestALimitLineRefusesThatTurnAndTheNextOnesAsTheAccountsLimit: "limit:
// 2" refuses the agent's turn that carries it and the next one, whatever it
// says, with the API's 429 and unified headers; side requests (no tools)
// are answered; the same line again (alone, or joined with a new prompt as
// a resumed Claude sends it) does not set the limit again.
func TestALimitLineRefusesThatTurnAndTheNextOnesAsTheAccountsLimit(t *testing.T) {
	var log bytes.Buffer
	srv := httptest.NewServer(&Server{Log: &log})
	defer srv.Close()
	turn := func(text string, tools bool) *http.Response {
		tl := ""
		if tools {
			tl = `,"tools":[{"name":"Bash"}]`
		}
		return post(t, srv.URL+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":`+strings.ReplaceAll(`"TEXT"`, "TEXT", text)+`}]`+tl+`}`)
	}
	var got []int
	for _, r := range []struct {
		text  string
		tools bool
	}{{`do it\nlimit: 2`, true}, {"a title", false}, {"continue", true}, {"continue", true}, {`do it\nlimit: 2`, true}, {`do it\nlimit: 2\n\ncontinue`, true}} {
		resp := turn(r.text, r.tools)
		got = append(got, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests {
			body, _ := io.ReadAll(resp.Body)
			if resp.Header.Get("anthropic-ratelimit-unified-status") != "rejected" || resp.Header.Get("anthropic-ratelimit-unified-reset") == "" ||
				!strings.Contains(string(body), `"type":"rate_limit_error"`) {
				t.Errorf("a refusal without the account limit's headers or body: %v %s", resp.Header, body)
			}
		}
		resp.Body.Close()
	}
	if want := []int{429, 200, 429, 200, 200, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if !strings.Contains(log.String(), `"reply":"usage limit"`) {
		t.Errorf("the log does not record the refusals:\n%s", log.String())
	}
}

// TestAServerStartedAgainRemembersTheLimitsItsLogSpent: a model started
// with an earlier one's log (a new network namespace per spawn) does not
// refuse a limit line that log shows refused; a line it never refused
// still sets the limit.
func TestAServerStartedAgainRemembersTheLimitsItsLogSpent(t *testing.T) {
	var log bytes.Buffer
	first := httptest.NewServer(&Server{Log: &log})
	turn := func(url, text string) int {
		resp := post(t, url+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"`+text+`"}],"tools":[{"name":"Bash"}]}`)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := turn(first.URL, `do it\nlimit: 1`); got != 429 {
		t.Fatalf("the first server answered the limit line with %d", got)
	}
	first.Close()
	next := &Server{Log: io.Discard}
	if err := next.Remember(strings.NewReader("not a record\n" + log.String())); err != nil {
		t.Fatal(err)
	}
	second := httptest.NewServer(next)
	defer second.Close()
	if got := turn(second.URL, `do it\nlimit: 1\ncontinue`); got != 200 {
		t.Errorf("the next server refused a spent limit line again: %d", got)
	}
	if got := turn(second.URL, `other\nlimit: 1 `); got != 429 {
		t.Errorf("a limit line it never refused was answered: %d", got)
	}
}

// TestALimitLineRefusesAResponsesTurnAsAPlanAtItsLimit: on the Responses
// API a limit line refuses the agent's turn with OpenAI's 429
// usage_limit_reached (Codex's usage limit), side requests answered.
func TestALimitLineRefusesAResponsesTurnAsAPlanAtItsLimit(t *testing.T) {
	var log bytes.Buffer
	srv := httptest.NewServer(&Server{Log: &log})
	defer srv.Close()
	turn := func(text string, tools bool) (int, string) {
		tl := ""
		if tools {
			tl = `,"tools":[{"type":"function","name":"shell"}]`
		}
		resp := post(t, srv.URL+"/v1/responses", `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"`+text+`"}]}]`+tl+`}`)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := turn(`do it\nlimit: 1`, true); code != 429 || !strings.Contains(body, `"type":"usage_limit_reached"`) || !strings.Contains(body, `"resets_in_seconds":3600`) {
		t.Errorf("the limited turn: %d %s", code, body)
	}
	if code, _ := turn("a title", false); code != 200 {
		t.Errorf("a side request: %d", code)
	}
	if code, _ := turn("continue", true); code != 200 {
		t.Errorf("the turn after the limit's one refusal: %d", code)
	}
}

// TestTwoTasksWithTheSameLimitLineEachSetIt: "limit: 1" under two tasks
// (two agents limited at once) refuses each task's turn once.
func TestTwoTasksWithTheSameLimitLineEachSetIt(t *testing.T) {
	srv := httptest.NewServer(&Server{Log: io.Discard})
	defer srv.Close()
	var got []int
	for _, text := range []string{`codex task\nlimit: 1`, `claude task\nlimit: 1`, `codex task\nlimit: 1\n\ncontinue`, `claude task\nlimit: 1\n\ncontinue`} {
		resp := post(t, srv.URL+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"`+text+`"}],"tools":[{"name":"Bash"}]}`)
		resp.Body.Close()
		got = append(got, resp.StatusCode)
	}
	if want := []int{429, 429, 200, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
}
