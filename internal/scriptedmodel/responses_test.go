package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A Codex turn as 0.171.0 sends it (shortened): developer messages, the
// environment context as a user message, then the typed text.
const codexTurn = `{"model":"gpt-5.1","stream":true,
 "tools":[{"type":"function","name":"exec_command"},{"type":"function","name":"write_stdin"}],
 "input":[
  {"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a coding agent"}]},
  {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/home/ada</cwd>\n</environment_context>"}]},
  {"type":"message","role":"user","content":[{"type":"input_text","text":"please\nrun: echo hi > /tmp/f"}]}]}`

func TestARunLineIsAnsweredWithOneCallOfTheOfferedShellToolStreamed(t *testing.T) {
	var log bytes.Buffer
	srv := httptest.NewServer(&Server{Log: &log})
	defer srv.Close()
	resp := post(t, srv.URL+"/v1/responses", codexTurn)
	defer resp.Body.Close()
	names, data := events(t, resp.Body)
	want := []string{"response.created", "response.output_item.added", "response.output_item.done", "response.completed"}
	if d := cmp.Diff(want, names); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	item := data[2]["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "exec_command" || item["arguments"] != `{"cmd":"echo hi \u003e /tmp/f"}` || item["call_id"] == "" {
		t.Errorf("call %v", item)
	}
	if done := data[3]["response"].(map[string]any); done["status"] != "completed" || len(done["output"].([]any)) != 1 {
		t.Errorf("completed %v", done)
	}
	var rec Record
	if err := json.Unmarshal(log.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Last != "please\nrun: echo hi > /tmp/f" || rec.Tool != "echo hi > /tmp/f" || rec.Path != "/v1/responses" || rec.Tools != 2 {
		t.Errorf("record %+v", rec)
	}
}

// TestAnEscalateLineAsksToRunOutsideTheSandbox: Codex's call carries
// sandbox_permissions require_escalated and a justification (what makes
// Codex with --ask-for-approval on-request ask a person).
func TestAnEscalateLineAsksToRunOutsideTheSandbox(t *testing.T) {
	srv := httptest.NewServer(&Server{})
	defer srv.Close()
	resp := post(t, srv.URL+"/v1/responses", strings.Replace(codexTurn, "run: echo hi", "escalate: echo hi", 1))
	defer resp.Body.Close()
	_, data := events(t, resp.Body)
	item := data[2]["item"].(map[string]any)
	var args map[string]string
	if err := json.Unmarshal([]byte(item["arguments"].(string)), &args); err != nil || args["cmd"] != "echo hi > /tmp/f" || args["sandbox_permissions"] != "require_escalated" || args["justification"] == "" {
		t.Errorf("call %v", item)
	}
}

func TestResponsesReplies(t *testing.T) {
	srv := httptest.NewServer(&Server{})
	defer srv.Close()
	for _, c := range []struct{ name, body, text string }{
		{"a tool's output as the newest item gets tool done",
			`{"tools":[{"name":"exec_command"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"run: true"}]},{"type":"function_call","call_id":"c"},{"type":"function_call_output","call_id":"c","output":"ok"}]}`,
			"tool done"},
		{"text gets the reply with its first line",
			`{"tools":[{"name":"exec_command"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hello\nthere"}]}]}`,
			"reply 2: hello"},
		{"a side request without tools gets text, even for a run line",
			`{"tools":[],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Generate a title\n\nUser prompt:\nrun: rm -rf /tmp/x"}]}]}`,
			"reply 3: Generate a title"},
		{"the older shell tool takes an argv",
			`{"tools":[{"name":"shell"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"run: echo x"}]}]}`,
			""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := post(t, srv.URL+"/v1/responses", c.body)
			defer resp.Body.Close()
			var doc struct {
				Output []struct {
					Type, Name, Arguments string
					Content               []struct{ Text string }
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || len(doc.Output) != 1 {
				t.Fatalf("reply %+v, %v", doc, err)
			}
			out := doc.Output[0]
			if c.text == "" {
				if out.Type != "function_call" || out.Name != "shell" || out.Arguments != `{"command":["bash","-lc","echo x"]}` {
					t.Errorf("call %+v", out)
				}
				return
			}
			if out.Type != "message" || len(out.Content) != 1 || !strings.HasPrefix(out.Content[0].Text, c.text) {
				t.Errorf("reply %+v, want %q", out, c.text)
			}
		})
	}
}
