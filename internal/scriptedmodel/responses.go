package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The OpenAI Responses API (POST /v1/responses, streamed as server-sent
// events), which Codex speaks to a custom provider. The script is the
// same as for the Messages API; a "run:" line becomes one call of the
// shell tool the request offers.

type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  []json.RawMessage `json:"input"`
	Tools  []responsesTool   `json:"tools"`
}

type responsesTool struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type responsesItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// LastInput returns the text of the newest user message of a Responses
// API input and whether the newest item is a tool's output. Texts that
// are context the agent adds (they start with "<", such as
// "<environment_context>", or with "# AGENTS.md") are left out.
func LastInput(items []json.RawMessage) (text string, toolResult bool) {
	for i := len(items) - 1; i >= 0; i-- {
		var it responsesItem
		if json.Unmarshal(items[i], &it) != nil {
			continue
		}
		if strings.HasSuffix(it.Type, "_call_output") {
			if i == len(items)-1 {
				return "", true
			}
			continue
		}
		if it.Type != "message" && it.Type != "" || it.Role != "user" {
			continue
		}
		var parts []string
		for _, c := range it.Content {
			t := strings.TrimSpace(c.Text)
			if c.Type != "input_text" || strings.HasPrefix(t, "<") || strings.HasPrefix(t, "# AGENTS.md") {
				continue
			}
			parts = append(parts, c.Text)
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n"), false
		}
	}
	return "", false
}

// shellCall returns the name and arguments of a call running cmd through
// the shell tool the request offers (Codex names it after its mode).
// An escalated call asks to run outside Codex's sandbox (measured with
// 0.171.0: sandbox_permissions and a justification).
func shellCall(tools []responsesTool, cmd string, escalated bool) (name, args string) {
	has := map[string]bool{}
	for _, t := range tools {
		has[t.Name] = true
	}
	var v map[string]any
	switch {
	case has["shell_command"]:
		name, v = "shell_command", map[string]any{"command": cmd}
	case has["exec_command"]:
		name, v = "exec_command", map[string]any{"cmd": cmd}
	default:
		name, v = "shell", map[string]any{"command": []string{"bash", "-lc", cmd}}
	}
	if escalated {
		v["sandbox_permissions"], v["justification"] = "require_escalated", "the scripted model asks to run this outside the sandbox"
	}
	data, _ := json.Marshal(v)
	return name, string(data)
}

func (s *Server) responses(w http.ResponseWriter, body []byte, rec *Record) int {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"bad JSON"}}`, http.StatusBadRequest)
		return http.StatusBadRequest
	}
	last, tr := LastInput(req.Input)
	s.mu.Lock()
	refused := len(req.Tools) > 0 && s.limited(last)
	s.mu.Unlock()
	if refused {
		rec.Last, rec.Reply, rec.Tools = last, refusedReply, len(req.Tools)
		refuseResponses(w, time.Now())
		return http.StatusTooManyRequests
	}
	text, cmd := answer(rec.N, last, tr, len(req.Tools) > 0)
	rec.Last, rec.Reply, rec.Tool, rec.Tools = last, text, cmd, len(req.Tools)
	id := fmt.Sprintf("resp_%04d", rec.N)
	var item map[string]any
	if cmd != "" {
		name, args := shellCall(req.Tools, cmd, escalated(last))
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%04d", rec.N),
			"call_id": fmt.Sprintf("call_%04d", rec.N), "name": name, "arguments": args, "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%04d", rec.N), "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": text, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": 12, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": 17}
	done := map[string]any{"id": id, "object": "response", "status": "completed", "model": req.Model,
		"output": []any{item}, "usage": usage}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(done)
		return http.StatusOK
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f, _ := w.(http.Flusher)
	seq := 0
	event := func(name string, v map[string]any) {
		v["type"], v["sequence_number"] = name, seq
		seq++
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		if f != nil {
			f.Flush()
		}
	}
	event("response.created", map[string]any{"response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": req.Model, "output": []any{}}})
	event("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	if cmd == "" {
		event("response.output_text.delta", map[string]any{"output_index": 0, "content_index": 0, "item_id": item["id"], "delta": text})
	}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	event("response.completed", map[string]any{"response": done})
	return http.StatusOK
}

// refuseResponses answers as OpenAI's API does at a ChatGPT plan's usage
// limit (measured with Codex 0.171.0: one request, no retry, the turn ends
// with the error usage_limit_exceeded in its rollout). Without the
// x-codex-primary-reset-at header Codex records no reset: the box's
// schedule decides the try.
func refuseResponses(w http.ResponseWriter, now time.Time) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("retry-after", strconv.Itoa(int(limitReset/time.Second)))
	w.WriteHeader(http.StatusTooManyRequests)
	fmt.Fprintf(w, `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":%d,"resets_in_seconds":%d}}`,
		now.Add(limitReset).Unix(), int(limitReset/time.Second))
}
